"""A run whose MCP tool call is waiting for the answer to its server's question: a Stop ends the turn
and the server is told "cancel"; when the process holding the call is gone (a restart), the orphan
sweep ends the waiting turn with a message saying the question was lost, instead of leaving it
waiting for ever. A question an HTTP server asks in a multi round-trip holds no run: the turn waits
like an approval, no sweep ends it, and the answer resumes the call."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

import pytest
from asgiref.sync import sync_to_async

from agents.elicitations import ERROR_LOST, elicitation_answer_to_resume
from agents.models import ToolApproval, Turn, TurnEvent
from agents.run.reasoner import Reasoner
from agents.run.runners import LocalRunner
from agents.turns import turn_cancel, turn_end_orphans, turn_start
from modes.models import AgentMode
from tests.helpers import async_db
from tests.helpers.mcp import START_TIMEOUT, HttpServer, all_settled, write_config
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


@pytest.fixture(scope="module")
def http_ask_host(tmp_path_factory):
    """The asking server over streamable HTTP (a 2026-07-28 multi round-trip), as "askhttp"."""
    server = HttpServer()
    server.listener.listen()
    fd = server.listener.fileno()
    server.process = subprocess.Popen([sys.executable, str(ASK), "--http", str(fd)], pass_fds=[fd])
    host = McpHost(write_config(tmp_path_factory.mktemp("mcp") / "mcp.json", {"askhttp": {"url": server.url}}))
    host.start()
    assert [s.state for s in host.wait_until_sync(all_settled, START_TIMEOUT)] == ["ready"]
    yield host
    host.stop()
    server.close()


async def test_a_question_that_can_be_resumed_holds_no_run_and_is_no_orphan(
    http_ask_host, make_session, model, llm, alice
):
    await AgentMode.objects.filter(key="general").aupdate(tool_policy=["*"])
    session = await make_session(mode="general", execution="agent")
    model.reply("", tool_calls=[("askhttp__profile", {})])
    turn = await sync_to_async(turn_start)(session=session, text="Ask me", execution=None, choice=None)
    turn = await asyncio.wait_for(Reasoner(llm=llm).run(turn.id), 30)  # the run ends: the turn waits
    assert turn.status == "awaiting_approval" and turn.state["awaiting"][0]["kind"] == "elicitation"
    row = await ToolApproval.objects.aget(turn_id=turn.id)
    assert row.request["resume"]["call"] == row.tool_call_id and row.request["resume"]["key"]
    assert "resume" not in turn.state["awaiting"][0]  # the server's state stays on the audit row
    assert await sync_to_async(turn_end_orphans)(runner=LocalRunner()) == []  # nothing held it: no orphan

    model.reply("After.")
    resumed = await sync_to_async(elicitation_answer_to_resume)(
        turn=turn, item_id=row.tool_call_id, action="accept", content={"name": "Ada"}, user=alice
    )
    assert resumed is not None and resumed.status == "awaiting_approval"  # the caller hands it to a run
    turn = await asyncio.wait_for(Reasoner(llm=llm).run(turn.id), 30)
    assert turn.status == "completed"
    result = await TurnEvent.objects.filter(turn_id=turn.id, type="tool.result").aget()
    assert result.payload["result"].startswith("accept {'name': 'Ada'")
