"""Probes: `/healthz` answers whatever the dependencies do; `/readyz` names each dependency and fails
(503) naming the one that is down; no login, nothing about hosts, versions or secrets. A worker's
probe fails when its event loop is stuck."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from agents.run.health import LoopWatch, WorkerProbe
from tests.helpers import ServerLikeAsyncClient, async_db
from tests.helpers.http import get_json

ROOT = Path(__file__).resolve().parents[3]


@async_db
async def test_healthz_and_readyz_answer_without_a_login():
    client = ServerLikeAsyncClient()
    live = await client.get("/healthz")
    assert (live.status_code, json.loads(live.content)) == (200, {"status": "ok", "checks": {}})
    ready = await client.get("/readyz")
    assert ready.status_code == 200
    assert json.loads(ready.content) == {"status": "ok", "checks": {"database": "ok", "channel_layer": "ok"}}
    assert ready["Cache-Control"].startswith("max-age=0")


@async_db
async def test_readyz_names_redis_and_the_run_queue_when_they_are_down(settings):
    settings.REDIS_URL = "redis://127.0.0.1:1/0"  # nothing listens there
    response = await ServerLikeAsyncClient().get("/readyz")
    body = json.loads(response.content)
    assert response.status_code == 503 and body["status"] == "unavailable"
    assert body["checks"]["database"] == "ok"
    assert body["checks"]["redis"].startswith("failed: ") and body["checks"]["run_queue"].startswith("failed: ")
    assert "127.0.0.1" not in response.content.decode()  # what failed, not where it lives


def test_readiness_names_the_database_when_it_is_down():
    """A real process whose database (PostgreSQL on a port nothing listens on) is unreachable."""
    env = {
        **os.environ,
        "DATABASE_URL": "postgresql://aptix@127.0.0.1:1/aptix",
        "DEBUG": "false",
        "SECRET_KEY": "test-only",
        "DJANGO_SETTINGS_MODULE": "aptix.settings",
    }
    env.pop("REDIS_URL", None)
    script = (
        "import asyncio, json, django; django.setup()\n"
        "from agents.run.health import answer_async\n"
        "print(json.dumps(asyncio.run(answer_async())), flush=True)\n"
        "import os; os._exit(0)  # not waiting for the hung ping's connection timeout"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60, check=False
    )
    status, body = json.loads(done.stdout.strip().splitlines()[-1])
    assert status == 503 and body["checks"]["database"].startswith("failed: "), done.stderr
    assert body["checks"]["channel_layer"] == "ok"


def test_a_workers_probe_fails_while_its_event_loop_is_stuck():
    loop = asyncio.new_event_loop()
    watch = LoopWatch()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    asyncio.run_coroutine_threadsafe(asyncio.sleep(0), loop).result(5)
    loop.call_soon_threadsafe(watch.start)
    probe = WorkerProbe(watch, 0, stuck_after=1.0)
    probe.start()
    url = f"http://127.0.0.1:{probe.port}/healthz"
    try:
        assert get_json(url) == (200, {"status": "ok", "checks": {"event_loop": "ok"}})
        release = threading.Event()
        loop.call_soon_threadsafe(release.wait, 30)  # a run that blocks the loop (a sync call in async code)
        deadline = time.monotonic() + 10
        while (answer := get_json(url))[0] == 200 and time.monotonic() < deadline:
            time.sleep(0.2)  # the loop is blocked by design: there is no event of it to await
        assert answer[0] == 503 and answer[1]["checks"]["event_loop"].startswith("failed: stuck for ")
        release.set()
        deadline = time.monotonic() + 10
        while (answer := get_json(url))[0] != 200 and time.monotonic() < deadline:
            time.sleep(0.2)
        assert answer == (200, {"status": "ok", "checks": {"event_loop": "ok"}})
    finally:
        probe.stop()
        loop.call_soon_threadsafe(loop.stop)
        thread.join(5)


@pytest.mark.parametrize("path", ["/metrics-nope", "/"])
def test_the_worker_probe_answers_only_its_paths(path):
    probe = WorkerProbe(LoopWatch(), 0)
    probe.start()
    try:
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(f"http://127.0.0.1:{probe.port}{path}", timeout=5)
        assert refused.value.code == 404
    finally:
        probe.stop()


@async_db  # the probe's thread reads the database: committed rows, restored afterwards
def test_the_worker_probe_serves_its_metrics_to_loopback():
    """A worker has no web server: its probe port is where its metrics are scraped."""
    probe = WorkerProbe(LoopWatch(), 0)
    probe.start()
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{probe.port}/metrics", timeout=10) as response:
            assert response.status == 200
            assert b"aptix_turns_finished_total" in response.read()
        request = urllib.request.Request(
            f"http://127.0.0.1:{probe.port}/metrics", headers={"X-Forwarded-For": "203.0.113.9"}
        )
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(request, timeout=10)
        assert refused.value.code == 403
    finally:
        probe.stop()
