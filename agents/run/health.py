"""Health and readiness of a process, for a load balancer's or an orchestrator's probes.

Liveness (`/healthz`): the process answers; nothing else is asked. Readiness (`/readyz`): what a
request of this process needs answers now: the database (`SELECT 1` on each configured one), and
with REDIS_URL the Redis server, the channel layer (a message sent to a fresh channel of this
process and received back) and the run queue (its stream is reachable). Each check has
CHECK_TIMEOUT seconds; they run at once, so a healthy answer takes one round trip of the slowest.

MCP servers are reported in `checks["mcp"]` (each server's state) but never make a process unready:
a broken tool server must not take the web tier out of rotation. Nothing in an answer names a host,
a version or a secret: a check says "ok" or what failed, in a few words.

A worker has no HTTP server of its own; `manage.py aptix_worker --health-port N` starts WorkerProbe,
a small threaded HTTP server answering the same two paths and `/metrics` (aptix/metrics.py). It does
not run on the worker's event loop: a loop that is stuck (a blocking call in a run) would otherwise
make the probe hang rather than fail. LoopWatch ticks on the loop, and the probe fails when the last
tick is older than STUCK_AFTER seconds.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import threading
import time
from collections.abc import Awaitable, Callable
from concurrent.futures import Future, ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from channels.layers import get_channel_layer
from django.conf import settings
from django.db import connections

from aptix.metrics import CONTENT_TYPE, exposition
from aptix.scrape import REFUSED, scrape_allowed
from tools.mcp import mcp_config_error, mcp_kept_errors, mcp_status

from ..llm.catalog import models_config_problem
from . import queue

logger = logging.getLogger("aptix.health")

CHECK_TIMEOUT = 2.0  # seconds each readiness check may take before it counts as failed
STUCK_AFTER = 10.0  # seconds without a tick of the worker's event loop before its probe fails
TICK = 0.5


def _database_ping() -> None:
    for alias in connections:
        with connections[alias].cursor() as cursor:
            cursor.execute("SELECT 1")


def _ping_and_close() -> None:
    try:
        _database_ping()
    finally:
        connections.close_all()  # probes come every few seconds: no connection kept for them


# A thread of the probes' own, not asgiref's one sync thread (a probe must not queue behind the
# requests it is asked about), and one ping at a time: while the database hangs, a ping waits for its
# connection timeout, and the probes that come meanwhile fail at once instead of piling up threads.
_pinger = ThreadPoolExecutor(max_workers=1, thread_name_prefix="aptix-health")
_ping: Future[None] | None = None
_ping_lock = threading.Lock()


async def _database() -> None:
    global _ping  # noqa: PLW0603 - the one ping in flight, shared by every probe of the process
    with _ping_lock:
        if _ping is not None and not _ping.done():
            raise TimeoutError("the previous check is still waiting for the database")
        _ping = _pinger.submit(_ping_and_close)
        ping = _ping
    await asyncio.wrap_future(ping)


async def _redis() -> None:
    client = queue.queue_client()
    try:
        await client.ping()
    finally:
        await client.aclose()


async def _run_queue() -> None:
    client = queue.queue_client()
    try:
        await client.exists(queue.STREAM)
    finally:
        await client.aclose()


async def _channel_layer() -> None:
    layer = get_channel_layer()
    if layer is None:
        raise RuntimeError("no channel layer configured")
    channel = await layer.new_channel()
    await layer.send(channel, {"type": "health.check"})
    message = await layer.receive(channel)
    if message.get("type") != "health.check":
        raise RuntimeError("the channel layer returned another message")


def _checks() -> dict[str, Callable[[], Awaitable[None]]]:
    checks: dict[str, Callable[[], Awaitable[None]]] = {"database": _database, "channel_layer": _channel_layer}
    if settings.REDIS_URL:
        checks |= {"redis": _redis, "run_queue": _run_queue}
    return checks


async def _one(check: Callable[[], Awaitable[None]]) -> str:
    try:
        await asyncio.wait_for(check(), timeout=CHECK_TIMEOUT)
    except TimeoutError as exc:
        return f"failed: {exc}" if str(exc) else f"failed: no answer within {CHECK_TIMEOUT:g} s"
    except Exception as exc:  # noqa: BLE001 - any failure of a dependency is "not ready", said in its words
        return f"failed: {type(exc).__name__}"
    return "ok"


def config_problems() -> tuple[list[str], bool]:
    """What is wrong with models.json and mcp.json as they are on disk now (each file, key and
    problem, paths cut to the file's name), and whether this process still serves a good
    configuration: the last good one keeps serving a file changed into a bad one, while a process
    that never had a good models configuration fails its turns (saying so) and is not ready."""
    problems, serving = [], True
    if (models := models_config_problem()) is not None:
        problems.append(_PATH.sub(r"\1", models[0]) + ("" if models[1] else " (no good configuration to serve)"))
        serving = models[1]
    if mcp := mcp_config_error():
        problems.append(_PATH.sub(r"\1", mcp) + " (the running MCP servers were kept)")
    problems += [f"mcp.json: {error} (the server runs on as it was)" for error in mcp_kept_errors()]
    return problems, serving


_PATH = re.compile(r"(?<![\w:/.])(?:/[^\s/\"']+)*/([^\s/\"']+)")  # an absolute path: only its last part shows


def mcp_states() -> dict[str, str]:
    """Each MCP server of this process and its state (reported, never a reason to be unready)."""
    return {status.name: status.state for status in mcp_status()}


async def readiness() -> tuple[bool, dict[str, Any]]:
    """Whether the process is ready, and each check's outcome ("ok" or "failed: …")."""
    checks = _checks()
    outcomes = await asyncio.gather(*(_one(check) for check in checks.values()))
    results: dict[str, Any] = dict(zip(checks, outcomes, strict=True))
    ready = all(outcome == "ok" for outcome in outcomes)
    if not ready:
        failed = {name: outcome for name, outcome in results.items() if outcome != "ok"}
        logger.warning("Not ready: %s", failed, extra={"event": "health.not_ready", "failed": failed})
    if states := mcp_states():
        results["mcp"] = states
    problems, serving = config_problems()
    if problems:  # named, and unready only when no good configuration serves (see config_problems)
        results["config"] = "failed: " + "; ".join(problems)
        ready = ready and serving
    return ready, results


def answer(ready: bool, checks: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    """The HTTP status and body of a probe's answer."""
    return (200 if ready else 503), {"status": "ok" if ready else "unavailable", "checks": checks}


# --- the worker's probe -------------------------------------------------------------------------


class LoopWatch:
    """Ticks on an event loop; `stuck_for()` says how long the loop has not run a tick."""

    def __init__(self) -> None:
        self.last_tick = time.monotonic()
        self._task: asyncio.Task | None = None

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._tick_forever(), name="aptix-loop-watch")

    async def _tick_forever(self) -> None:
        while True:
            self.last_tick = time.monotonic()
            await asyncio.sleep(TICK)

    def stuck_for(self) -> float:
        late = time.monotonic() - self.last_tick - TICK
        return late if late > 0 else 0.0


class WorkerProbe:
    """`/healthz` and `/readyz` of a worker process, served on a thread of their own."""

    def __init__(
        self, watch: LoopWatch, port: int, host: str = "127.0.0.1", *, stuck_after: float = STUCK_AFTER
    ) -> None:
        self.watch, self.stuck_after = watch, stuck_after
        self.server = ThreadingHTTPServer((host, port), self._handler())
        self.port = self.server.server_address[1]
        self._thread = threading.Thread(target=self.server.serve_forever, name="aptix-health", daemon=True)

    def start(self) -> None:
        self._thread.start()
        logger.info("Worker probe on port %d (/healthz, /readyz)", self.port, extra={"event": "health.probe"})

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def answer(self, path: str) -> tuple[int, dict[str, Any]]:
        stuck = self.watch.stuck_for()
        loop = "ok" if stuck < self.stuck_after else f"failed: stuck for {stuck:.0f} s"
        if path == "/healthz":
            return answer(loop == "ok", {"event_loop": loop})
        ready, checks = asyncio.run(readiness())  # this thread's own loop: the worker's may be stuck
        return answer(ready and loop == "ok", {"event_loop": loop, **checks})

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        probe = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                if self.path == "/metrics":
                    headers = {name.lower(): value for name, value in self.headers.items()}
                    status, content_type, data = scrape(self.client_address[0], headers)
                elif self.path in ("/healthz", "/readyz"):
                    status, body = probe.answer(self.path)
                    content_type, data = "application/json", json.dumps(body).encode()
                else:
                    self.send_error(404)
                    return
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Cache-Control", "no-store")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:
                pass  # probes every few seconds: not worth a log line each

        return Handler


def scrape(address: str, headers: dict[str, str]) -> tuple[int, str, bytes]:
    """The worker's `/metrics` (the same rule as a web process's: loopback or the bearer token)."""
    if not scrape_allowed(address, headers, settings.APTIX_METRICS_TOKEN):
        return 403, "text/plain; charset=utf-8", REFUSED.encode()
    try:
        return 200, CONTENT_TYPE, exposition()
    finally:
        connections.close_all()  # this thread's, opened by the gauges read at scrape time


async def answer_async() -> tuple[int, dict[str, Any]]:
    """A web process's readiness answer (the /readyz view)."""
    return answer(*await readiness())
