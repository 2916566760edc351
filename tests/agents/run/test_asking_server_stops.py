"""A handshake-era server (the mcp SDK 1.30) asks the user during a tool call and its process dies while
the question waits: the question is closed at once (its card goes) with a message saying the server
stopped while the question waited, the model is told so as the call's result and the turn goes on to
its end, and a late answer is refused with 409 saying the question is closed. A genuine timeout after
an answered question says so too."""

from __future__ import annotations

import asyncio
import json
import os
import signal

import pytest
from asgiref.sync import sync_to_async
from django.core.exceptions import ValidationError

from agents.elicitations import elicitation_answer_to_resume
from agents.models import ToolApproval, Turn, TurnEvent
from agents.run.reasoner import Reasoner
from agents.turns import turn_start
from agents.web.timeline import render_turn
from aptix.tokens import api_token_create
from modes.models import AgentMode
from tests.helpers import ServerLikeAsyncClient, async_db
from tests.helpers.mcp import START_TIMEOUT, all_settled, by_name, write_config
from tests.helpers.sdk1 import sdk1_entry
from tools.mcp.host import McpHost

pytestmark = [async_db, pytest.mark.slow]  # a real MCP server process (mcp 1.30, its own virtualenv)


@pytest.fixture
def old_host(tmp_path):
    host = McpHost(write_config(tmp_path / "mcp.json", {"old": sdk1_entry(timeout=30)}))
    host.start()
    assert [s.state for s in host.wait_until_sync(all_settled, START_TIMEOUT)] == ["ready"]
    yield host
    host.stop()


async def paused_on_question(make_session, model, llm, arguments: dict):
    await AgentMode.objects.filter(key="general").aupdate(tool_policy=["*"])
    session = await make_session(mode="general", execution="agent")
    model.reply("", tool_calls=[("old__ask", arguments)])
    model.reply("After.")
    turn = await sync_to_async(turn_start)(session=session, text="Ask me", execution=None, choice=None)
    task = asyncio.create_task(Reasoner(llm=llm).run(turn.id))
    async with asyncio.timeout(30):
        while not await Turn.objects.filter(pk=turn.id, status="awaiting_approval").aexists():
            await asyncio.sleep(0.05)
    return turn, task


async def test_a_server_that_dies_while_its_question_waits_closes_the_question(
    old_host, make_session, model, llm, alice
):
    turn, task = await paused_on_question(make_session, model, llm, {})
    os.kill(by_name(old_host.status())["old"].pid, signal.SIGKILL)
    turn = await asyncio.wait_for(task, 20)  # the turn does not stay paused

    assert turn.status == "completed" and turn.answer == "After."
    [result] = [e.payload async for e in TurnEvent.objects.filter(turn_id=turn.id, type="tool.result")]
    error = result["error"]
    assert not result["ok"]
    assert 'MCP server "old" stopped' in error and "while its question waited for an answer" in error
    assert "timed out" not in error and "a restart" not in error
    told = model.requests[1]["messages"][-1]
    assert told["role"] == "tool" and "while its question waited for an answer" in told["content"]

    row = await ToolApproval.objects.aget(turn_id=turn.id)
    assert row.decision == "cancelled" and row.decided_by_id is None  # closed, by nobody
    types = [e.type async for e in TurnEvent.objects.filter(turn_id=turn.id).order_by("seq")]
    assert types.index("approval.requested") < types.index("approval.decided") < types.index("tool.result")
    decided = await TurnEvent.objects.aget(turn_id=turn.id, type="approval.decided")
    assert decided.payload["decisions"][0]["id"] == row.tool_call_id  # the card goes
    assert "while its question waited" in decided.payload["decisions"][0]["reason"]
    stored = [e async for e in TurnEvent.objects.filter(turn_id=turn.id).order_by("seq")]
    page = await sync_to_async(render_turn)(turn, stored)  # the card, as the page draws it
    assert "Closed: MCP server &quot;old&quot; stopped" in page
    assert "question-form" not in page  # nothing left to answer

    with pytest.raises(ValidationError) as refused:  # a late answer, from the card or the API
        await sync_to_async(elicitation_answer_to_resume)(
            turn=turn, item_id=row.tool_call_id, action="accept", content={"name": "Ada"}, user=alice
        )
    assert refused.value.error_dict["toolCallId"][0].code == "stale"  # 409
    message = refused.value.error_dict["toolCallId"][0].message
    assert "This question is closed" in message and 'MCP server "old" stopped' in message

    token = (await sync_to_async(api_token_create)(user=alice, name="ci"))[1]
    answer = {"toolCallId": row.tool_call_id, "decision": "accept", "content": {"name": "Ada"}}
    response = await ServerLikeAsyncClient().post(
        "/api/v1/agent/execute",
        data=json.dumps({"conversationId": str(turn.session_id), "approvals": [answer]}),
        content_type="application/json",
        headers={"Authorization": f"Bearer {token}"},
    )
    assert response.status_code == 409
    assert "This question is closed" in json.loads(response.content)["error"]["message"]
