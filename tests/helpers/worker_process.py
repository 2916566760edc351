"""A real `manage.py aptix_worker` subprocess on the test database, with the Redis of the test run
(`make test` starts one and exports APTIX_TEST_REDIS_URL), and the scripted model it talks to. The
fixtures `redis_layer` and `worker` are registered in tests/agents/conftest.py; the process itself is
deployment.py's Worker (shared with the scale-out test and bench/scale_out.py)."""

from __future__ import annotations

import asyncio
import os
import subprocess

import pytest
from channels.layers import get_channel_layer
from django.db import connection
from django.test import override_settings

from agents.run.runners import WorkerRunner
from agents.runner import use_runner
from aptix.redis_options import redis_channel_layers
from tests.helpers.deployment import Worker
from tests.helpers.scripted_model import ScriptedModel, loopback_server

REDIS_URL = os.environ.get("APTIX_TEST_REDIS_URL", "")


@pytest.fixture
def redis_layer():
    if not REDIS_URL:
        pytest.skip("needs Redis (make test starts one; APTIX_TEST_REDIS_URL is unset)")
    if connection.vendor != "postgresql":
        pytest.skip("the worker process shares the test database, which needs PostgreSQL")
    with (
        override_settings(REDIS_URL=REDIS_URL, CHANNEL_LAYERS=redis_channel_layers(REDIS_URL)),
        use_runner(WorkerRunner()),
    ):
        yield get_channel_layer()


def _database_url() -> str:
    s = connection.settings_dict
    return f"postgresql://{s['USER']}:{s['PASSWORD'] or ''}@{s['HOST']}:{s['PORT']}/{s['NAME']}"


HEARTBEAT = 0.5  # seconds, in the worker and here: a turn silent for 3 s lost its worker


@pytest.fixture
async def worker(redis_layer, tmp_path, settings):
    """A scripted model on loopback and an `aptix_worker` process that talks to it."""
    settings.APTIX_RUN_HEARTBEAT = HEARTBEAT
    model = ScriptedModel()
    async with loopback_server(model) as url:
        env = {
            **os.environ,
            "DATABASE_URL": _database_url(),
            "REDIS_URL": REDIS_URL,
            "OPENAI_BASE_URL": f"{url}/v1",
            "OPENAI_API_KEY": "test",
            "APTIX_LLM_MAX_RETRIES": "0",
            "APTIX_MCP_AUTOSTART": "false",
            "DEBUG": "false",
            "SECRET_KEY": "test-only",
            "APTIX_RUN_HEARTBEAT": str(HEARTBEAT),
            "APTIX_AUTO_TITLES": "false",  # a title call would take a reply the test queued for a turn
        }
        log = tmp_path / "worker.log"
        started = Worker(model, env, log)
        try:
            yield started
        finally:
            process = started.process
            if process.poll() is None:
                process.terminate()
            try:
                await asyncio.to_thread(process.wait, 10)
            except subprocess.TimeoutExpired:
                process.kill()
            if process.returncode not in (0, -15, -9):
                print(log.read_text())
