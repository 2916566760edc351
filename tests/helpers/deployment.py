"""A multi-process deployment as real subprocesses, without pytest: N web processes (`manage.py
aptix_serve`, tests/browser/live.py's LiveServer) and M workers (`manage.py aptix_worker`) on one
PostgreSQL database and one Redis, with a scripted model on loopback, plus the clients that post
turns to it and watch their streams. Used by tests/agents/deployment/test_scale_out.py (and, through
worker_process.py, the worker tests) and by bench/scale_out.py.

The database must be the one this process's Django uses (the subprocesses get its URL); its data
must be committed before the subprocesses read it."""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import subprocess
import sys
from collections import Counter
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import httpx2
import websockets

from tests.browser.live import LiveServer, live_database_url
from tests.helpers.scripted_model import ScriptedModel, loopback_server

ROOT = Path(__file__).resolve().parents[2]
CURSOR = re.compile(r'id="stream-cursor" hx-swap-oob="true" data-turn="(\w+)" data-seq="(\d+)"')
TAIL = re.compile(r'^<b data-seq="(\d+)">')  # appended text (templates/agents/_live_tail.html)
FINAL = re.compile(r'class="turn status-(completed|failed|cancelled|limit_reached)"')


class Worker:
    """The `aptix_worker` process and the scripted model it talks to (attributes of the model pass through)."""

    def __init__(self, model: ScriptedModel, env: dict[str, str], log: Path, args: tuple[str, ...] = ()) -> None:
        self.model, self.env, self.log, self.args = model, env, log, args
        self.process = self._spawn()

    def _spawn(self) -> subprocess.Popen:
        with self.log.open("a") as out:
            return subprocess.Popen(
                [sys.executable, "manage.py", "aptix_worker", "--grace", "1", *self.args],
                cwd=ROOT,
                env=self.env,
                stdout=out,
                stderr=subprocess.STDOUT,
            )

    async def restart(self) -> None:
        """SIGKILL the worker (no clean-up of any kind) and start a new one."""
        self.process.kill()
        await asyncio.to_thread(self.process.wait, 10)
        self.process = self._spawn()

    async def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
        try:
            await asyncio.to_thread(self.process.wait, 10)
        except subprocess.TimeoutExpired:
            self.process.kill()

    def __getattr__(self, name):
        return getattr(self.model, name)


def worker_env(model_url: str, redis_url: str, **extra: str) -> dict[str, str]:
    """A worker's environment: this process's, on this process's database, talking to the model."""
    return {
        **os.environ,
        "DATABASE_URL": live_database_url(),
        "REDIS_URL": redis_url,
        "OPENAI_BASE_URL": f"{model_url}/v1",
        "OPENAI_API_KEY": "test",
        "APTIX_LLM_MAX_RETRIES": "0",
        "APTIX_MCP_AUTOSTART": "false",
        "APTIX_AUTO_TITLES": "false",  # a title call would take a reply the test queued for a turn
        "DEBUG": "false",
        **extra,
    }


@dataclass
class Deployment:
    model: ScriptedModel
    webs: list[LiveServer]
    workers: list[Worker]

    def logs(self) -> list[Path]:
        return [*(w.log for w in self.workers), *(web.log_path for web in self.webs)]


@contextlib.asynccontextmanager
async def deployment(
    var_dir: Path, *, redis_url: str, secret_key: str, heartbeat: float, webs: int = 2, workers: int = 2, **env: str
) -> AsyncIterator[Deployment]:
    """The model, `webs` web processes and `workers` workers; all stopped on exit. `secret_key` must
    be this process's (its login sessions must hold there too); `env` is added to every process's."""
    model = ScriptedModel()
    async with loopback_server(model) as url:
        common = {
            "REDIS_URL": redis_url,
            "SECRET_KEY": secret_key,
            "OPENAI_BASE_URL": f"{url}/v1",
            "OPENAI_API_KEY": "test",
            "APTIX_LLM_MAX_RETRIES": "0",
            "APTIX_RUN_HEARTBEAT": str(heartbeat),
            # as the workers': a title call would take a reply queued for a turn (a web process runs
            # turns itself when there are no workers), and that turn failed with "no reply queued"
            "APTIX_AUTO_TITLES": "false",
            **env,
        }
        servers = [LiveServer(var_dir=var_dir / f"web{i}", env=common) for i in range(webs)]
        started: list[Worker] = []
        try:
            await asyncio.gather(*(asyncio.to_thread(web.start) for web in servers))
            started = [
                Worker(model, worker_env(url, redis_url, **common), var_dir / f"worker{i}.log") for i in range(workers)
            ]
            yield Deployment(model, servers, started)
        finally:
            await asyncio.gather(*(worker.stop() for worker in started))
            await asyncio.gather(*(asyncio.to_thread(web.stop) for web in servers))


def warnings_in(log: Path, last: int = 20) -> list[str]:
    lines = log.read_text(errors="replace").splitlines() if log.exists() else []
    return [line for line in lines if '"WARNING"' in line or '"ERROR"' in line][-last:]


async def watch(
    web: LiveServer, session_id: str, cookie: bytes, connected: asyncio.Event | None = None
) -> tuple[list[int], str]:
    """A client of `web` from before the session's turn: the seqs it was sent for the turn (stream
    cursors and appended text), and the turn's final status. `connected` is set once it is open."""
    uri = f"ws://127.0.0.1:{web.port}/ws/sessions/{session_id}/?turn=&seq=0"
    seqs: list[int] = []
    async with websockets.connect(uri, origin=web.url, additional_headers={"Cookie": cookie.decode()}) as socket:
        if connected is not None:
            connected.set()
        async for frame in socket:
            if cursor := CURSOR.search(str(frame)):
                seqs.append(int(cursor.group(2)))
            elif tail := TAIL.search(str(frame)):  # appended text carries no cursor: its own seq
                seqs.append(int(tail.group(1)))
            if final := FINAL.search(str(frame)):
                return seqs, final.group(1)
    raise AssertionError(f"the stream of {session_id} closed before its turn ended")


async def execute(client: httpx2.AsyncClient, token: str, session_id: str, text: str) -> dict:
    """POST a turn through the JSON API (it answers when the turn has ended)."""
    response = await client.post(
        "/api/v1/agent/execute",
        json={"conversationId": session_id, "message": text, "execution": "ask"},
        headers={"Authorization": f"Bearer {token}"},
    )
    assert response.status_code == 200, response.text
    return response.json()


def requests_per_message(model: ScriptedModel) -> Counter[str]:
    """How many model requests each user message caused (a turn that ran twice asked twice)."""
    return Counter(request["messages"][-1]["content"] for request in model.requests)
