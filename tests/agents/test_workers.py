"""The multi-process run path: with REDIS_URL a web process dispatches turns over a Redis channel
layer to `manage.py runworker aptix-runs`, a real subprocess here, which streams from the model,
writes the events and broadcasts them back; cancelling from the web process stops the worker's run.

Needs a Redis server (`make test` starts one and exports APTIX_TEST_REDIS_URL) and PostgreSQL (the
worker must share the test database; SQLite's test database lives in this process's memory).
"""
from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from asgiref.sync import sync_to_async
from channels.layers import get_channel_layer
from django.db import connection
from django.test import override_settings

from agents.events import message_events, session_group
from agents.models import Turn
from agents.runs import dispatch, turn_cancel, turn_start, wait_for_turn
from aptix.tokens import api_token_create
from tests.helpers import ServerLikeAsyncClient, async_db

from .scripted_model import ScriptedModel, loopback_server

pytestmark = async_db

REDIS_URL = os.environ.get("APTIX_TEST_REDIS_URL", "")
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def redis_layer():
    if not REDIS_URL:
        pytest.skip("needs Redis (make test starts one; APTIX_TEST_REDIS_URL is unset)")
    if connection.vendor != "postgresql":
        pytest.skip("the worker process shares the test database, which needs PostgreSQL")
    layers = {"default": {"BACKEND": "channels_redis.core.RedisChannelLayer", "CONFIG": {"hosts": [REDIS_URL]}}}
    with override_settings(REDIS_URL=REDIS_URL, CHANNEL_LAYERS=layers):
        yield get_channel_layer()


def _database_url() -> str:
    s = connection.settings_dict
    return f"postgresql://{s['USER']}:{s['PASSWORD'] or ''}@{s['HOST']}:{s['PORT']}/{s['NAME']}"


@pytest.fixture
async def worker(redis_layer, tmp_path):
    """A scripted model on loopback and a `runworker` process that talks to it."""
    model = ScriptedModel()
    async with loopback_server(model) as url:
        env = {
            **os.environ, "DATABASE_URL": _database_url(), "REDIS_URL": REDIS_URL,
            "OPENAI_BASE_URL": f"{url}/v1", "OPENAI_API_KEY": "test", "APTIX_LLM_MAX_RETRIES": "0",
            "APTIX_MCP_AUTOSTART": "false", "DEBUG": "false", "SECRET_KEY": "test-only",
        }
        log = tmp_path / "worker.log"
        with log.open("w") as out:
            process = subprocess.Popen([sys.executable, "manage.py", "runworker", "aptix-runs"], cwd=ROOT,
                                       env=env, stdout=out, stderr=subprocess.STDOUT)
        try:
            yield model
        finally:
            process.terminate()
            try:
                await asyncio.to_thread(process.wait, 10)
            except subprocess.TimeoutExpired:
                process.kill()
            if process.returncode not in (0, -15):
                print(log.read_text())


async def test_api_turn_runs_in_a_worker_process(worker, alice):
    worker.reply("Hello from a worker.")
    _, secret = await sync_to_async(api_token_create)(user=alice)
    response = await ServerLikeAsyncClient().post(
        "/api/v1/agent/execute", data=json.dumps({"message": "Hi", "execution": "ask"}),
        content_type="application/json", headers={"Authorization": f"Bearer {secret}"},
    )
    body = json.loads(response.content)
    assert response.status_code == 200, body
    assert body["status"] == "completed" and body["answer"] == "Hello from a worker."
    assert worker.calls == 1  # the worker, not this process, asked the model
    turn = await Turn.objects.aget(pk=body["turnId"])
    types = [e.type async for e in turn.events.order_by("seq")]
    assert types[0] == "turn.started" and types[-1] == "turn.completed"


async def test_cancel_from_the_web_process_stops_the_worker_run(worker, redis_layer, make_session):
    worker.reply("word " * 400, chunk_delay=0.05)  # ~20 s of streaming unless stopped
    session = await make_session()
    channel = await redis_layer.new_channel()
    await redis_layer.group_add(session_group(session.id), channel)
    turn = await sync_to_async(turn_start)(session=session, text="Talk for a long time")
    await dispatch(turn.id)
    while not any(e["event"] == "model.delta" for e in message_events(await redis_layer.receive(channel))):
        pass  # the worker is streaming the reply
    await turn_cancel(turn=turn)
    ended = await asyncio.wait_for(wait_for_turn(turn.id), timeout=10)
    assert ended.status == Turn.Status.CANCELLED
    await asyncio.wait_for(worker.stream_cancelled.wait(), timeout=5)  # the model stream was abandoned
    final = await ended.events.order_by("-seq").afirst()
    assert final.type == "turn.cancelled"
