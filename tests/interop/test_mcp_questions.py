"""An MCP server's own question during a turn begun over Aptix's MCP server, asked back through the
calling client: a form with the server's schema, or its link (URL mode); the client's answer reaches
the server and the turn goes on. A client that cannot be asked gets the link to the session. The
asking server is a real MCP server process (tests/tools/mcp/ask_server.py) over stdio."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from asgiref.sync import sync_to_async
from mcp_types import ElicitRequestFormParams, ElicitRequestURLParams, ElicitResult

from agents.models import ToolApproval, Turn
from modes.models import AgentMode
from tests.helpers import async_db
from tests.helpers.interop import mcp_client
from tests.helpers.mcp import ready_host

pytestmark = [async_db, pytest.mark.slow]  # a real MCP server process

ASK = Path(__file__).resolve().parents[1] / "tools" / "mcp" / "ask_server.py"


@pytest.fixture
async def asking(tmp_path):
    """The asking server as the process's MCP server, and General's policy running its tools unasked."""
    await AgentMode.objects.filter(key="general").aupdate(tool_policy=["*"])
    servers = {"ask": {"command": sys.executable, "args": [str(ASK)]}}
    with await sync_to_async(ready_host, thread_sensitive=False)(tmp_path, servers, serving=True) as host:
        yield host


def answering(asked: list, result: ElicitResult):
    async def callback(context, params):
        asked.append(params)
        return result

    return callback


async def test_a_servers_form_question_is_asked_through_the_client_and_the_turn_goes_on(
    asking, llm, model, alice_token
):
    first = model.reply("", tool_calls=[("ask__profile", {})])
    model.reply("Thanks, Ada.")
    asked: list = []
    answer = ElicitResult(action="accept", content={"name": "Ada", "age": 36})
    async with mcp_client(alice_token, mode="2026-07-28", elicitation_callback=answering(asked, answer)) as client:
        result = await client.call_tool("ask_general", {"message": "Ask me", "execution": "agent"})
    [form] = asked
    assert isinstance(form, ElicitRequestFormParams)
    assert form.message == "The MCP server ask asks: Tell me about you"
    assert form.requested_schema["required"] == ["name"]
    assert not result.is_error and result.content[0].text == "Thanks, Ada.", result.content
    tool_message = next(m for m in model.last_messages if m["role"] == "tool")
    assert tool_message["content"].startswith("accept ") and "'Ada'" in tool_message["content"]
    row = await ToolApproval.objects.aget(tool_call_id=first.tool_calls[0].id)
    assert (row.kind, row.decision, row.content["name"]) == ("elicitation", "accepted", "Ada")


async def test_a_servers_link_is_asked_in_url_mode_and_cancelling_reaches_the_server(asking, llm, model, alice_token):
    first = model.reply("", tool_calls=[("ask__sign_in", {})])
    model.reply("Stopped.")
    asked: list = []
    async with mcp_client(
        alice_token, mode="2026-07-28", elicitation_callback=answering(asked, ElicitResult(action="cancel"))
    ) as client:
        result = await client.call_tool("ask_general", {"message": "Sign me in", "execution": "agent"})
    [link] = asked
    assert isinstance(link, ElicitRequestURLParams)
    assert link.url == "https://bank.example/authorize" and "Sign in at the bank" in link.message
    assert result.content[0].text == "Stopped."
    assert "cancel None" in next(m for m in model.last_messages if m["role"] == "tool")["content"]
    assert (await ToolApproval.objects.aget(tool_call_id=first.tool_calls[0].id)).decision == "cancelled"


async def test_content_the_servers_schema_refuses_is_a_tool_error_and_the_question_stays(
    asking, llm, model, alice_token
):
    model.reply("", tool_calls=[("ask__profile", {})])
    bad = ElicitResult(action="accept", content={"name": "Ada", "age": "old"})
    async with mcp_client(alice_token, mode="2026-07-28", elicitation_callback=answering([], bad)) as client:
        result = await client.call_tool("ask_general", {"message": "Ask me", "execution": "agent"})
    assert result.is_error and result.content[0].text == "Age: enter a whole number."
    assert (await Turn.objects.aget()).status == "awaiting_approval"


async def test_a_client_without_elicitation_is_told_where_to_answer(asking, llm, model, alice_token, settings):
    settings.APTIX_PUBLIC_URL = "https://aptix.example"
    model.reply("", tool_calls=[("ask__profile", {})])
    async with mcp_client(alice_token, mode="legacy") as client:
        result = await client.call_tool("ask_general", {"message": "Ask me", "execution": "agent"})
    assert not result.is_error and result.structured_content["status"] == "awaiting_approval"
    conversation_id = result.structured_content["conversationId"]
    assert result.content[0].text == (
        'The turn waits for your answer to the MCP server ask: "Tell me about you". '
        f"Decide in the browser: https://aptix.example/sessions/{conversation_id}/"
    )
