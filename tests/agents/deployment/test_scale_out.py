"""Scale-out: 2 web processes (`manage.py aptix_serve`) and 2 workers (`manage.py
aptix_worker`) as real subprocesses on the test PostgreSQL and Redis, with a scripted model on
loopback. Turns posted to one web process stream on websockets of the other; every turn runs exactly
once (the model sees one request per turn) and every client sees every event of its turn once, in
order; a worker SIGKILLed mid-run leaves no turn running past its lease (plus 10 s) and every client
sees the end; the processes survive an idle period longer than every Redis timeout."""

from __future__ import annotations

import asyncio
import re
import time
from collections import Counter

import httpx2
import pytest
from asgiref.sync import sync_to_async
from django.conf import settings as django_settings
from django.db import connection

from agents.models import Turn, TurnEvent
from agents.sessions import session_create
from aptix.redis_options import SOCKET_TIMEOUT
from aptix.tokens import api_token_create
from tests.helpers import async_db
from tests.helpers import deployment as multi
from tests.helpers.deployment import execute, requests_per_message, watch
from tests.helpers.streams import session_cookie
from tests.helpers.worker_process import REDIS_URL

pytestmark = [pytest.mark.slow, async_db]

HEARTBEAT = 2.0  # seconds: 50 runs starting at once on a 2-core CI machine must renew their leases
LEASE = HEARTBEAT * 6


@pytest.fixture
async def deployment(tmp_path):
    """The model, 2 web processes and 2 workers (tests/helpers/deployment.py)."""
    if not REDIS_URL or connection.vendor != "postgresql":
        pytest.skip("needs Redis and PostgreSQL (make test starts both)")
    running = multi.deployment(
        tmp_path,
        redis_url=REDIS_URL,
        secret_key=django_settings.SECRET_KEY,
        heartbeat=HEARTBEAT,
        APTIX_RATE_TURNS="off",
        APTIX_RATE_API="off",
        APTIX_WS_MAX_PER_USER="200",
    )
    async with running as started:
        try:
            yield started, time.monotonic()  # the deployment and when it was ready (idle from then on)
        finally:
            for log in started.logs():  # shown when a test fails
                print(f"--- {log}:", *multi.warnings_in(log), sep="\n")


async def _idle_past_every_redis_timeout(deployment: multi.Deployment, *, since: float) -> None:
    """Wait until the processes have been up and idle longer than every Redis timeout (ours and
    redis-py's): a quiet connection that timed out used to kill workers and close websockets. Each
    process is checked every second meanwhile, so one that dies fails the test at once; the idle
    period counts from the moment the deployment was ready, not from when this test got to it."""
    idle = SOCKET_TIMEOUT + 5
    processes = [w.process for w in deployment.workers] + [web.process for web in deployment.webs]
    async with asyncio.timeout(idle + 10):
        while time.monotonic() - since < idle:
            died = [p.args for p in processes if p.poll() is not None]
            assert not died, f"died while idle: {died}"
            await asyncio.sleep(1)


async def _sessions(alice, team_a, count: int) -> list[str]:
    make = sync_to_async(session_create)
    return [(await make(team=team_a, user=alice, execution="ask")).id for _ in range(count)]


async def test_fifty_turns_on_two_web_processes_and_two_workers_run_once_and_stream_everywhere(
    deployment, alice, team_a
):
    started, ready_at = deployment
    model, (web_a, web_b) = started.model, started.webs
    await _idle_past_every_redis_timeout(started, since=ready_at)

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

    assert requests_per_message(model) == Counter(f"turn {i}" for i in range(50)), "a turn ran twice or not at all"
    for body, (seqs, status) in zip(bodies, seen, strict=True):
        stored = [e async for e in TurnEvent.objects.filter(turn_id=body["turnId"]).values_list("seq", flat=True)]
        assert status == "completed" and seqs == sorted(stored) == list(range(1, len(stored) + 1))


async def test_a_worker_killed_mid_run_leaves_no_turn_running(deployment, alice, team_a):
    started, _ = deployment
    model, (web_a, web_b), workers = started.model, started.webs, started.workers
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
    for body, (seqs, _) in zip(bodies, seen, strict=True):
        # ...and every event before it: those the killed worker wrote but never broadcast come from
        # the database (agents/web/consumers.py fills the gap the end's seq shows)
        stored = [e async for e in TurnEvent.objects.filter(turn_id=body["turnId"]).values_list("seq", flat=True)]
        assert seqs == sorted(stored) == list(range(1, len(stored) + 1)), body["turnId"]
    assert await Turn.objects.filter(session_id__in=sessions, finished_at__isnull=True).acount() == 0


async def test_the_home_composers_first_message_runs_on_a_worker(tmp_path, alice, team_a):
    """Composer-first on a web process with workers: the view redirects without waiting for the
    dispatch, which must not depend on the request's thread (it failed with "CurrentThreadExecutor
    already quit" and the turn never left `queued`)."""
    if not REDIS_URL or connection.vendor != "postgresql":
        pytest.skip("needs Redis and PostgreSQL (make test starts both)")
    running = multi.deployment(
        tmp_path, redis_url=REDIS_URL, secret_key=django_settings.SECRET_KEY, heartbeat=HEARTBEAT, webs=1, workers=1
    )
    async with running as started:
        web = started.webs[0]
        name, _, value = (await session_cookie(alice)).decode().partition("=")
        async with httpx2.AsyncClient(base_url=web.url, cookies={name: value}, timeout=30) as client:
            home = await client.get("/")
            csrf = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', home.text)
            assert home.status_code == 200 and csrf is not None
            started.model.reply("Hello from a worker.")
            form = {"csrfmiddlewaretoken": csrf.group(1), "team": team_a.pk, "mode": "general", "execution": "ask"}
            sent = await client.post("/sessions/new/", data={**form, "message": "Hi"}, headers={"Referer": web.url})
        assert sent.status_code == 302, sent.text
        async with asyncio.timeout(30):
            while not await Turn.objects.filter(user_message="Hi", finished_at__isnull=False).aexists():
                await asyncio.sleep(0.05)  # a worker runs it: the database says when
        turn = await Turn.objects.aget(user_message="Hi")
        assert (turn.status, turn.answer) == ("completed", "Hello from a worker."), turn.error
