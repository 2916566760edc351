"""Scale-out (issue 17, item 2): 2 web processes (`manage.py aptix_serve`) and 2 workers (`manage.py
aptix_worker`) as real subprocesses on the test PostgreSQL and Redis, with a scripted model on
loopback. Turns posted to one web process stream on websockets of the other; every turn runs exactly
once (the model sees one request per turn) and every client sees every event of its turn once, in
order; a worker SIGKILLed mid-run leaves no turn running past its lease (plus 10 s) and every client
sees the end; the processes survive an idle period longer than every Redis timeout."""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import subprocess
from collections import Counter

import httpx2
import pytest
import websockets
from asgiref.sync import sync_to_async
from django.conf import settings as django_settings
from django.db import connection

from agents.models import Turn, TurnEvent
from agents.sessions import session_create
from aptix.redis_options import SOCKET_TIMEOUT
from aptix.tokens import api_token_create
from tests.browser.live import LiveServer
from tests.helpers import async_db

from .scripted_model import ScriptedModel, loopback_server
from .test_stream import session_cookie
from .worker_process import REDIS_URL, Worker, _database_url

pytestmark = async_db

CURSOR = re.compile(r'id="stream-cursor" hx-swap-oob="true" data-turn="(\w+)" data-seq="(\d+)"')
TAIL = re.compile(r'class="live-tail" data-seq="(\d+)"')
FINAL = re.compile(r'class="turn status-(completed|failed|cancelled|limit_reached)"')
HEARTBEAT = 2.0  # seconds: 50 runs starting at once on a 2-core CI machine must renew their leases
LEASE = HEARTBEAT * 6


@pytest.fixture
async def deployment(tmp_path):
    """The model, 2 web processes and 2 workers."""
    if not REDIS_URL or connection.vendor != "postgresql":
        pytest.skip("needs Redis and PostgreSQL (make test starts both)")
    model = ScriptedModel()
    async with loopback_server(model) as url:
        common = {
            "REDIS_URL": REDIS_URL,
            "SECRET_KEY": django_settings.SECRET_KEY,  # the test's login sessions must hold there too
            "OPENAI_BASE_URL": f"{url}/v1",
            "OPENAI_API_KEY": "test",
            "APTIX_LLM_MAX_RETRIES": "0",
            "APTIX_RUN_HEARTBEAT": str(HEARTBEAT),
            "APTIX_RATE_TURNS": "off",
            "APTIX_RATE_API": "off",
            "APTIX_WS_MAX_PER_USER": "200",
        }
        webs = [LiveServer(var_dir=tmp_path / f"web{i}", env=common) for i in range(2)]
        worker_env = {
            **os.environ,
            **common,
            "DATABASE_URL": _database_url(),
            "DEBUG": "false",
            "APTIX_MCP_AUTOSTART": "false",
        }
        workers: list[Worker] = []
        try:
            await asyncio.gather(*(asyncio.to_thread(web.start) for web in webs))
            workers = [Worker(model, worker_env, tmp_path / f"worker{i}.log") for i in range(2)]
            yield model, webs, workers
        finally:
            for worker in workers:
                if worker.process.poll() is None:
                    worker.process.terminate()
            for worker in workers:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    await asyncio.to_thread(worker.process.wait, 10)
            await asyncio.gather(*(asyncio.to_thread(web.stop) for web in webs))
            for log in [*(w.log for w in workers), *(web.log_path for web in webs)]:  # shown when a test fails
                warnings = [line for line in log.read_text().splitlines() if '"WARNING"' in line or '"ERROR"' in line]
                print(f"--- {log}:", *warnings[-20:], sep="\n")


async def watch(web: LiveServer, session_id: str, cookie: bytes) -> tuple[list[int], str]:
    """A client of `web`: the seqs it was sent for the session's turn, and the turn's final status."""
    origin = web.url
    uri = f"ws://127.0.0.1:{web.port}/ws/sessions/{session_id}/?turn=&seq=0"
    seqs: list[int] = []
    async with websockets.connect(uri, origin=origin, additional_headers={"Cookie": cookie.decode()}) as socket:
        async for frame in socket:
            if cursor := CURSOR.search(str(frame)):
                seqs.append(int(cursor.group(2)))
            elif tail := TAIL.search(str(frame)):  # appended text does not move the cursor every time
                seqs.append(int(tail.group(1)))
            if final := FINAL.search(str(frame)):
                return seqs, final.group(1)
    raise AssertionError(f"the stream of {session_id} closed before its turn ended")


async def execute(client: httpx2.AsyncClient, token: str, session_id: str, text: str) -> dict:
    response = await client.post(
        "/api/v1/agent/execute",
        json={"conversationId": session_id, "message": text, "execution": "ask"},
        headers={"Authorization": f"Bearer {token}"},
    )
    assert response.status_code == 200, response.text
    return response.json()


async def _sessions(alice, team_a, count: int) -> list[str]:
    make = sync_to_async(session_create)
    return [(await make(team=team_a, user=alice, execution="ask")).id for _ in range(count)]


async def test_fifty_turns_on_two_web_processes_and_two_workers_run_once_and_stream_everywhere(
    deployment, alice, team_a
):
    model, (web_a, web_b), workers = deployment
    await asyncio.sleep(SOCKET_TIMEOUT + 5)  # idle: longer than every Redis timeout, ours and redis-py's
    assert all(w.process.poll() is None for w in workers), "a worker died while idle"

    sessions = await _sessions(alice, team_a, 50)
    for _ in sessions:
        model.reply("Done " * 12, chunk_delay=0.01)
    cookie = await session_cookie(alice)
    _, token = await sync_to_async(api_token_create)(user=alice)
    watchers = [asyncio.create_task(watch(web_b, sid, cookie)) for sid in sessions]
    async with httpx2.AsyncClient(base_url=web_a.url, timeout=120) as client:
        bodies = await asyncio.gather(*(execute(client, token, sid, f"turn {i}") for i, sid in enumerate(sessions)))
    assert [b["status"] for b in bodies] == ["completed"] * 50
    seen = await asyncio.wait_for(asyncio.gather(*watchers), timeout=60)

    asked = Counter(request["messages"][-1]["content"] for request in model.requests)
    assert asked == Counter(f"turn {i}" for i in range(50)), "a turn ran twice or not at all"
    for body, (seqs, status) in zip(bodies, seen, strict=True):
        stored = [e async for e in TurnEvent.objects.filter(turn_id=body["turnId"]).values_list("seq", flat=True)]
        assert status == "completed" and seqs == sorted(stored) == list(range(1, len(stored) + 1))


async def test_a_worker_killed_mid_run_leaves_no_turn_running(deployment, alice, team_a):
    model, (web_a, web_b), workers = deployment
    sessions = await _sessions(alice, team_a, 8)
    for _ in sessions:
        model.reply("word " * 100, chunk_delay=0.05)  # ~5 s each
    cookie = await session_cookie(alice)
    _, token = await sync_to_async(api_token_create)(user=alice)
    watchers = [asyncio.create_task(watch(web_b, sid, cookie)) for sid in sessions]
    async with httpx2.AsyncClient(base_url=web_a.url, timeout=120) as client:
        posted = [asyncio.create_task(execute(client, token, sid, f"long {i}")) for i, sid in enumerate(sessions)]
        async with asyncio.timeout(30):
            while await Turn.objects.filter(session_id__in=sessions, status=Turn.Status.RUNNING).acount() < 8:
                await asyncio.sleep(0.05)  # the workers run them: the database says when
        holders = {name async for name in Turn.objects.filter(session_id__in=sessions).values_list("worker", flat=True)}
        victim = next(w for w in workers if any(f":{w.process.pid}:" in name for name in holders))
        victim.process.kill()  # SIGKILL a worker that holds turns
        await asyncio.to_thread(victim.process.wait, 10)
        bodies = await asyncio.wait_for(asyncio.gather(*posted), timeout=LEASE + 10 + 5)
    seen = await asyncio.wait_for(asyncio.gather(*watchers), timeout=10)
    statuses = Counter(b["status"] for b in bodies)
    assert set(statuses) <= {"completed", "failed"} and statuses["failed"] > 0, statuses  # the dead one's failed
    assert [status for _, status in seen] == [b["status"] for b in bodies]  # every client saw its end
    assert await Turn.objects.filter(session_id__in=sessions, finished_at__isnull=True).acount() == 0
