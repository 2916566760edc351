"""A run whose MCP tool call is waiting for the answer to its server's question: a Stop ends the turn
and the server is told "cancel"; when the process holding the call is gone (a restart), the orphan
sweep ends the waiting turn with a message saying the question was lost, instead of leaving it
waiting for ever."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest
from asgiref.sync import sync_to_async

from agents.elicitations import ERROR_LOST
from agents.models import ToolApproval, Turn, TurnEvent
from agents.run.reasoner import Reasoner
from agents.run.runners import LocalRunner
from agents.turns import turn_cancel, turn_end_orphans, turn_start
from modes.models import AgentMode
from tests.helpers import async_db
from tests.helpers.mcp import START_TIMEOUT, all_settled, write_config
from tools.mcp.host import McpHost

pytestmark = [async_db, pytest.mark.slow]  # a real MCP server process

ASK = Path(__file__).resolve().parents[2] / "tools" / "mcp" / "ask_server.py"


@pytest.fixture(scope="module")
def ask_host(tmp_path_factory):
    config = write_config(
        tmp_path_factory.mktemp("mcp") / "mcp.json", {"ask": {"command": sys.executable, "args": [str(ASK)]}}
    )
    host = McpHost(config)
    host.start()
    assert [s.state for s in host.wait_until_sync(all_settled, START_TIMEOUT)] == ["ready"]
    yield host
    host.stop()


async def waiting_run(make_session, model, llm):
    """A turn whose run waits for the answer to ask__profile's question, and that run's task."""
    await AgentMode.objects.filter(key="general").aupdate(tool_policy=["*"])
    session = await make_session(mode="general", execution="agent")
    model.reply("", tool_calls=[("ask__profile", {})])
    model.reply("After.")
    turn = await sync_to_async(turn_start)(session=session, text="Ask me", execution=None, choice=None)
    task = asyncio.create_task(Reasoner(llm=llm).run(turn.id))
    for _ in range(200):
        if await Turn.objects.filter(pk=turn.id, status="awaiting_approval").aexists():
            return turn, task
        await asyncio.sleep(0.05)
    raise AssertionError("the turn never paused for the question")


async def test_a_stop_ends_the_waiting_turn_and_the_server_hears_cancel(ask_host, make_session, model, llm):
    turn, task = await waiting_run(make_session, model, llm)
    assert await turn_cancel(turn=await Turn.objects.aget(pk=turn.id))
    await asyncio.wait_for(asyncio.gather(task, return_exceptions=True), 10)
    turn = await Turn.objects.aget(pk=turn.id)
    assert turn.status == "cancelled"
    assert (await ToolApproval.objects.aget(turn_id=turn.id)).decision == "cancelled"
    assert len(model.requests) == 1  # the model was not asked again after the stop
    types = [e.type async for e in TurnEvent.objects.filter(turn_id=turn.id).order_by("seq")]
    assert types[-2:] == ["approval.decided", "turn.cancelled"]  # nothing written after the end


async def test_a_question_whose_process_is_gone_ends_the_turn_saying_so(ask_host, make_session, model, llm):
    turn, task = await waiting_run(make_session, model, llm)
    try:
        # Another process's view after a restart: no task holds the turn there.
        ended = await sync_to_async(turn_end_orphans)(runner=LocalRunner())
        assert ended == [turn.id]
        turn = await Turn.objects.aget(pk=turn.id)
        assert (turn.status, turn.error) == ("failed", ERROR_LOST)
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


async def test_a_question_still_held_is_not_an_orphan(ask_host, make_session, model, llm):
    turn, task = await waiting_run(make_session, model, llm)
    runner = LocalRunner()
    runner._tasks[turn.id] = task  # this process holds it
    try:
        assert await sync_to_async(turn_end_orphans)(runner=runner) == []
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
