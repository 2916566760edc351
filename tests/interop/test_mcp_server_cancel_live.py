"""The MCP server of a real Aptix process (`manage.py aptix_serve`, Daphne) through the official MCP
client over HTTP, on a scripted model that takes its time: a call that asks for progress hears its
turn's step while the model is still thinking (the POST answered as an SSE stream, read as it comes),
and cancelling the call (an anyio cancel scope around `call_tool`: on the handshake-era protocol the
client posts `notifications/cancelled`, on 2026-07-28 it closes the call's stream) ends the turn
cancelled; the same client then calls again."""

from __future__ import annotations

import asyncio
import time

import anyio
import pytest

from agents.models import Turn
from tests.browser.live import LiveServer, ModelSwitchboard, scripted_env
from tests.helpers import async_db
from tests.helpers.interop import mcp_client
from tests.helpers.scripted_model import ScriptedModel, loopback_server

pytestmark = [pytest.mark.slow, async_db]

ENDED_TIMEOUT = 30.0


async def _ended(text: str) -> Turn:
    """The turn asked `text` once the live process has ended it (polling the row it writes: nothing
    of that process's run is heard in this one)."""
    deadline = time.monotonic() + ENDED_TIMEOUT
    while time.monotonic() < deadline:
        turn = await Turn.objects.aget(user_message=text)
        if turn.is_finished:
            return turn
        await asyncio.sleep(0.1)  # polling a state the other process shows only when asked
    raise AssertionError(f"The turn {text!r} never ended: {turn.status}")


@pytest.mark.parametrize("protocol", ["legacy", "2026-07-28"])
async def test_a_live_call_hears_progress_and_its_cancel_stops_the_turn(tmp_path, alice_token, protocol):
    model = ScriptedModel()
    model.delay(60)  # the turn's model call: still under way when the call is cancelled
    model.reply("Too late.")
    model.reply("Next answer.")
    board = ModelSwitchboard()
    board.model = model
    heard: list[str | None] = []
    progressed = asyncio.Event()

    async def progress(value: float, total: float | None, message: str | None) -> None:
        heard.append(message)
        progressed.set()

    async with loopback_server(board) as url:
        board.url = url
        live = LiveServer(var_dir=tmp_path, env=scripted_env(board))
        await asyncio.to_thread(live.start)
        try:
            call_scope = anyio.CancelScope()
            results: list = []
            async with mcp_client(alice_token, mode=protocol, server=live.url) as client:

                async def call_and_keep() -> None:
                    with call_scope:
                        results.append(
                            await client.call_tool(
                                "ask_general",
                                {"message": "Take your time", "execution": "ask"},
                                progress_callback=progress,
                            )
                        )

                async with anyio.create_task_group() as tasks:
                    tasks.start_soon(call_and_keep)
                    await asyncio.wait_for(model.requested.wait(), 30)
                    await asyncio.wait_for(progressed.wait(), 30)  # heard while the model still thinks
                    call_scope.cancel()
                turn = await _ended("Take your time")
                after = await client.call_tool("ask_general", {"message": "Again", "execution": "ask"})
        finally:
            await asyncio.to_thread(live.stop)
    assert heard[0] == "Step 1", heard
    assert results == []
    assert turn.status == Turn.Status.CANCELLED and turn.answer != "Too late."
    assert not after.is_error and after.content[0].text == "Next answer.", live.log_text()[-3000:]
