"""A crashed server's turns end when the next server starts, before anybody visits.

`manage.py aptix_serve` (what `make run` starts) runs as a real subprocess on the test database and
talks to a scripted model on loopback. A turn is streaming when the server is SIGKILLed: the turn is
left `running` with nothing to run it. The new server ends it at start-up with no request reaching it
(plain `daphne aptix.asgi:application` swept only on its first request, so the admin, the API and
every open page showed the dead turn as running until somebody came by).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal

import httpx2
import pytest
from asgiref.sync import sync_to_async

from agents.models import Turn
from agents.turns import ERROR_INTERRUPTED
from aptix.tokens import api_token_create
from tests.browser.live import LiveServer
from tests.helpers import async_db
from tests.helpers.scripted_model import ScriptedModel, loopback_server

pytestmark = [pytest.mark.slow, async_db]

END_TIMEOUT = 30.0  # seconds for the new server to start and end the turn


async def _turn_status(turn_id: str) -> str:
    return (await Turn.objects.aget(pk=turn_id)).status


async def _until_status(turn_id: str, wanted: str) -> None:
    """The server is another process: the database is the only place to watch."""
    async with asyncio.timeout(END_TIMEOUT):
        while await _turn_status(turn_id) != wanted:
            await asyncio.sleep(0.1)


@pytest.fixture
async def live(tmp_path):
    model = ScriptedModel()
    async with loopback_server(model) as url:
        env = {"OPENAI_BASE_URL": f"{url}/v1", "OPENAI_API_KEY": "test", "APTIX_LLM_MAX_RETRIES": "0"}
        server = LiveServer(var_dir=tmp_path / "live", env=env)
        try:
            yield server, model
        finally:
            await asyncio.to_thread(server.stop)


async def test_a_killed_servers_running_turn_ends_when_the_next_one_starts(live, alice):
    server, model = live
    await asyncio.to_thread(server.start)
    model.reply("word " * 400, chunk_delay=0.05)  # ~20 s of streaming
    _, secret = await sync_to_async(api_token_create)(user=alice)
    async with httpx2.AsyncClient(base_url=server.url, timeout=60) as client:
        request = asyncio.create_task(
            client.post(
                "/api/v1/agent/execute",
                json={"message": "Talk for a long time", "execution": "ask"},
                headers={"Authorization": f"Bearer {secret}"},
            )
        )
        await asyncio.wait_for(model.requested.wait(), timeout=20)
        turn = await Turn.objects.filter(session__user=alice).order_by("-created_at").afirst()
        assert turn is not None
        await _until_status(turn.id, Turn.Status.RUNNING)  # its first events are written in a batch

        os.killpg(server.process.pid, signal.SIGKILL)  # no clean-up of any kind
        await asyncio.to_thread(server.process.wait, 10)
        await asyncio.wait_for(model.stream_cancelled.wait(), timeout=10)  # the model saw it go
        with contextlib.suppress(httpx2.HTTPError):
            await request
    assert await _turn_status(turn.id) == Turn.Status.RUNNING  # what everybody sees: a dead turn running

    server.process = None
    await asyncio.to_thread(server.start, server.port, wait_ready=False)
    try:
        await _until_status(turn.id, Turn.Status.FAILED)
    except TimeoutError:
        pytest.fail(
            f"turn {await _turn_status(turn.id)}, server exit {server.process.poll()}; log:\n{server.log_text()}"
        )
    turn = await Turn.objects.aget(pk=turn.id)
    assert turn.error == ERROR_INTERRUPTED and turn.finished_at is not None
    last = await turn.events.order_by("-seq").afirst()
    assert last.type == "turn.failed" and last.payload["kind"] == "interrupted"
    requests = [line for line in server.log_text().splitlines() if '"GET ' in line or '"POST ' in line]
    assert requests == []  # nobody visited the new server
