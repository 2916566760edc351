"""`manage.py aptix_worker --health-port N`: a real worker process answers its probes, ready once its
database, Redis, channel layer and run queue answer."""

from __future__ import annotations

import asyncio
import socket

import pytest

from tests.helpers import async_db
from tests.helpers.deployment import Worker, worker_env
from tests.helpers.http import get_json
from tests.helpers.scripted_model import ScriptedModel, loopback_server
from tests.helpers.worker_process import REDIS_URL

pytestmark = [pytest.mark.slow, async_db]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def test_a_worker_answers_its_probes(redis_layer, tmp_path):
    port = _free_port()
    model = ScriptedModel()
    async with loopback_server(model) as url:
        worker = Worker(model, worker_env(url, REDIS_URL), tmp_path / "worker.log", args=("--health-port", str(port)))
        try:
            async with asyncio.timeout(60):  # start-up: Django, then the probe's thread
                while (live := await asyncio.to_thread(get_json, f"http://127.0.0.1:{port}/healthz")) is None:
                    assert worker.process.poll() is None, (tmp_path / "worker.log").read_text()
                    await asyncio.sleep(0.2)  # a process starting: nothing to await but its port
            assert live == (200, {"status": "ok", "checks": {"event_loop": "ok"}})
            ready = await asyncio.to_thread(get_json, f"http://127.0.0.1:{port}/readyz")
            assert ready == (
                200,
                {
                    "status": "ok",
                    "checks": {
                        "event_loop": "ok",
                        "database": "ok",
                        "channel_layer": "ok",
                        "redis": "ok",
                        "run_queue": "ok",
                    },
                },
            )
        finally:
            await worker.stop()
