"""An MCP server's question during a tool call, through the JSON API: the turn pauses
(`awaiting_approval`) listing it in `approvals` with its message and schema (or url); the owner's
answer (accept with content checked against the schema, decline, cancel) reaches the server and the
turn goes on to its end; nobody else answers; each question is audited. Each test runs with the server
over stdio (the question is asked in the call the run holds open) and over streamable HTTP (a
2026-07-28 multi round-trip: no run holds the question; the answer resumes the turn)."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest
from asgiref.sync import sync_to_async

from agents.models import ToolApproval, Turn, TurnEvent
from aptix.tokens import api_token_create
from modes.models import AgentMode
from tests.helpers import ServerLikeAsyncClient, async_db
from tests.helpers.mcp import START_TIMEOUT, HttpServer, all_settled, write_config
from tools.mcp import host as host_module
from tools.mcp.host import McpHost

pytestmark = [async_db, pytest.mark.slow]  # a real MCP server process

URL = "/api/v1/agent/execute"
ASK = Path(__file__).resolve().parents[2] / "tools" / "mcp" / "ask_server.py"


@pytest.fixture(scope="module", params=["stdio", "http"])
def ask_host(request, tmp_path_factory):
    """The asking server over stdio (its question is asked in the call the run holds open) and over
    streamable HTTP (a multi round-trip: the run pauses the turn and ends; the answer resumes it)."""
    http = None
    if request.param == "http":
        http = HttpServer()
        http.listener.listen()
        fd = http.listener.fileno()
        http.process = subprocess.Popen([sys.executable, str(ASK), "--http", str(fd)], pass_fds=[fd])
        entry = {"url": http.url}
    else:
        entry = {"command": sys.executable, "args": [str(ASK)]}
    config = write_config(tmp_path_factory.mktemp("mcp") / "mcp.json", {"ask": entry})
    host = McpHost(config)  # the process-wide registry the reasoner offers from
    host.start()
    assert [s.state for s in host.wait_until_sync(all_settled, START_TIMEOUT)] == ["ready"]
    previous, host_module._host = host_module._host, host
    yield host
    host_module._host = previous
    host.stop()
    if http is not None:
        http.close()


@pytest.fixture
async def agent_mode():
    await AgentMode.objects.filter(key="general").aupdate(tool_policy=["*"])


async def token_of(user):
    return (await sync_to_async(api_token_create)(user=user, name="ci"))[1]


async def post(body, token):
    response = await ServerLikeAsyncClient().post(
        URL, data=json.dumps(body), content_type="application/json", headers={"Authorization": f"Bearer {token}"}
    )
    return response.status_code, json.loads(response.content)


async def asked(model, token, tool="ask__profile"):
    first = model.reply("", tool_calls=[(tool, {})])
    status, body = await post({"message": "Ask me", "execution": "agent"}, token)
    assert status == 200 and body["status"] == "awaiting_approval", body
    return first.tool_calls[0].id, body


async def test_a_form_question_is_listed_answered_and_the_turn_goes_on(ask_host, agent_mode, llm, model, alice):
    token = await token_of(alice)
    call_id, body = await asked(model, token)
    [item] = body["approvals"]
    assert item["toolCallId"] == call_id and item["kind"] == "elicitation"
    assert item["message"] == "Tell me about you" and item["server"] == "ask"
    assert item["schema"]["required"] == ["name"]

    model.reply("Thanks, Ada.")
    answer = {"toolCallId": call_id, "decision": "accept", "content": {"name": "Ada", "age": 36}}
    status, body = await post({"conversationId": body["conversationId"], "approvals": [answer]}, token)
    assert status == 200, body
    assert body["status"] == "completed" and body["answer"] == "Thanks, Ada." and body["approvals"] == []
    tool_message = next(m for m in model.last_messages if m["role"] == "tool")
    # what the server received (it echoes the action and the content; PostgreSQL's jsonb keeps no key order)
    action, _, content = tool_message["content"].partition(" ")
    assert (action, ast.literal_eval(content)) == ("accept", {"name": "Ada", "age": 36, "subscribe": False})
    row = await ToolApproval.objects.aget(tool_call_id=call_id)
    assert (row.kind, row.decision, row.content) == (
        "elicitation",
        "accepted",
        {"name": "Ada", "age": 36, "subscribe": False},
    )
    assert row.decided_by_id == alice.pk and row.request["message"] == "Tell me about you"
    types = [e.type async for e in TurnEvent.objects.filter(turn_id=body["turnId"]).order_by("seq")]
    assert types.count("approval.decided") == 1 and types[-1] == "turn.completed"


async def test_wrong_content_is_refused_naming_the_input_and_the_question_stays(
    ask_host, agent_mode, llm, model, alice
):
    token = await token_of(alice)
    call_id, body = await asked(model, token)
    bad = {"toolCallId": call_id, "decision": "accept", "content": {"name": "Ada", "age": "old"}}
    status, error = await post({"conversationId": body["conversationId"], "approvals": [bad]}, token)
    assert status == 400 and error["error"] == {
        "message": "Age: enter a whole number.",
        "field": "approvals[0].content",
    }
    assert (await Turn.objects.aget(pk=body["turnId"])).status == "awaiting_approval"

    model.reply("Fine.")
    decline = {"toolCallId": call_id, "decision": "decline"}
    status, body = await post({"conversationId": body["conversationId"], "approvals": [decline]}, token)
    assert status == 200 and body["status"] == "completed", body
    assert "decline None" in next(m for m in model.last_messages if m["role"] == "tool")["content"]


async def test_a_url_question_lists_the_link_and_cancel_reaches_the_server(ask_host, agent_mode, llm, model, alice):
    token = await token_of(alice)
    call_id, body = await asked(model, token, "ask__sign_in")
    [item] = body["approvals"]
    assert item["url"] == "https://bank.example/authorize" and "schema" not in item
    model.reply("Stopped.")
    cancel = {"toolCallId": call_id, "decision": "cancel"}
    status, body = await post({"conversationId": body["conversationId"], "approvals": [cancel]}, token)
    assert status == 200 and body["status"] == "completed", body
    assert "cancel None" in next(m for m in model.last_messages if m["role"] == "tool")["content"]
    assert (await ToolApproval.objects.aget(tool_call_id=call_id)).decision == "cancelled"


async def test_nobody_but_the_owner_answers(ask_host, agent_mode, llm, model, alice, bob):
    call_id, body = await asked(model, await token_of(alice))
    answer = {"toolCallId": call_id, "decision": "accept", "content": {"name": "Mallory"}}
    status, error = await post({"conversationId": body["conversationId"], "approvals": [answer]}, await token_of(bob))
    assert status == 404 and error["error"]["field"] == "conversationId"
    assert (await ToolApproval.objects.aget(tool_call_id=call_id)).is_pending
    model.reply("Done.")
    status, _ = await post(
        {"conversationId": body["conversationId"], "approvals": [{**answer, "decision": "cancel"}]},
        await token_of(alice),
    )
    assert status == 200


async def test_approve_is_not_an_answer(ask_host, agent_mode, llm, model, alice):
    token = await token_of(alice)
    call_id, body = await asked(model, token)
    approve = {"toolCallId": call_id, "decision": "approve"}
    status, error = await post({"conversationId": body["conversationId"], "approvals": [approve]}, token)
    assert status == 400 and "answer it with accept, decline or cancel" in error["error"]["message"]
    assert (await ToolApproval.objects.aget(tool_call_id=call_id)).is_pending
    model.reply("Done.")
    cancel = {"toolCallId": call_id, "decision": "cancel"}
    assert (await post({"conversationId": body["conversationId"], "approvals": [cancel]}, token))[0] == 200
