"""The MCP server of a real Aptix process (`manage.py aptix_serve`, Daphne) through the official MCP
client over HTTP, with the built-in offline model and the shipped SQL MCP server over a demo
database of this run: both protocol versions list the user's modes as tools, `ask_data-analysis`
answers "How many orders are there?" from the database, a second call continues the conversation,
another user's token sees neither the first user's conversations nor their team's modes, and a mode
change the model asks for is approved or denied through the client's elicitation form."""

from __future__ import annotations

import asyncio
import base64
import json
import sqlite3
import time
import urllib.error
import urllib.request

import pytest
from asgiref.sync import sync_to_async
from mcp.shared.exceptions import MCPError
from mcp_types import ElicitResult

from agents.models import AgentSession, Turn
from modes.models import ModeHistory
from tests.browser.live import ROOT, LiveServer
from tests.helpers import async_db
from tests.helpers.catalogs import B_ONLY, team_only_mode
from tests.helpers.interop import mcp_client
from tools.demo_data import build_demo_database

pytestmark = [pytest.mark.slow, async_db]

MCP_READY_TIMEOUT = 60.0
# The offline model's query for "how many … orders": the orders of each month (agents/llm/offline/data.py).
ORDERS_BY_MONTH = "SELECT strftime('%Y-%m', ordered_at), COUNT(*) FROM orders GROUP BY 1 ORDER BY 1"


@pytest.fixture(scope="module")
def demo_db(tmp_path_factory):
    path = tmp_path_factory.mktemp("mcp") / "demo.sqlite3"
    build_demo_database(path)
    return path


@pytest.fixture(scope="module")
def server(django_db_setup, demo_db, tmp_path_factory):
    """One Daphne for the module, with the SQL MCP server over the demo database."""
    config = tmp_path_factory.mktemp("config") / "mcp.json"
    sql = {"command": "python", "args": ["-m", "tools.mcp.sql_server", f"sqlite:///{demo_db}"], "cwd": str(ROOT)}
    config.write_text(json.dumps({"mcpServers": {"sql": sql}}))
    live = LiveServer(
        var_dir=tmp_path_factory.mktemp("live"),
        env={"APTIX_MCP_AUTOSTART": "true", "APTIX_MCP_CONFIG": str(config)},
    ).start()
    try:
        _wait_for_mcp_server(live, "sql")
        yield live
    finally:
        live.stop()


def _wait_for_mcp_server(live: LiveServer, name: str) -> None:
    """The MCP host starts its servers in the background: /readyz says when one is ready."""
    deadline = time.monotonic() + MCP_READY_TIMEOUT
    while time.monotonic() < deadline:
        with urllib.request.urlopen(f"{live.url}/readyz", timeout=5) as response:
            if json.load(response).get("checks", {}).get("mcp", {}).get(name) == "ready":
                return
        time.sleep(0.2)  # polling a state the process shows only when asked
    raise AssertionError(f"MCP server {name} never became ready:\n{live.log_text()[-3000:]}")


@pytest.fixture
async def b_only(team_b):
    return await sync_to_async(team_only_mode)(team_b)


def orders_by_month(demo_db) -> list[tuple[str, int]]:
    with sqlite3.connect(demo_db) as db:
        return db.execute(ORDERS_BY_MONTH).fetchall()


@pytest.mark.parametrize("protocol", ["legacy", "2026-07-28"])
async def test_ask_data_analysis_answers_from_the_database(server, demo_db, alice, alice_token, protocol):
    async with mcp_client(alice_token, mode=protocol, server=server.url, name="VS Code") as client:
        tools = {tool.name for tool in (await client.list_tools()).tools}
        assert {"ask_general", "ask_data-analysis"} <= tools
        result = await client.call_tool("ask_data-analysis", {"message": "How many orders are there?"})
    assert not result.is_error, result.content
    answer = result.content[0].text
    months = orders_by_month(demo_db)
    assert months and all(str(count) in answer for _month, count in months), answer
    # The chart the offline model draws comes along as image content; its link in the text is absolute.
    assert [content.type for content in result.content] == ["text", "image"]
    assert base64.b64decode(result.content[1].data).startswith(b"\x89PNG")
    # (APTIX_PUBLIC_URL: the live server's default, http://127.0.0.1:8000)
    assert "](/media/" not in answer and "](http://127.0.0.1:8000/media/images/" in answer
    structured = result.structured_content
    assert structured["status"] == "completed"
    turn = await Turn.objects.select_related("session").aget(pk=structured["turnId"])
    assert turn.session_id == structured["conversationId"] and turn.session.user_id == alice.id
    assert (turn.session.mode, turn.execution) == ("data-analysis", "agent")  # the mode's own execution
    called = [e.payload["name"] async for e in turn.events.filter(type="tool.called").order_by("seq")]
    assert "sql__query" in called


async def test_a_second_call_continues_and_another_user_sees_none_of_it(server, alice_token, carol_token, b_only):
    async with mcp_client(alice_token, server=server.url) as client:
        first = await client.call_tool("ask_general", {"message": "Hello there", "execution": "ask"})
        conversation_id = first.structured_content["conversationId"]
        second = await client.call_tool(
            "ask_general", {"message": "And again", "conversationId": conversation_id, "execution": "ask"}
        )
        alices = [str(r.uri) for r in (await client.list_resources()).resources]
        alice_tools = {tool.name for tool in (await client.list_tools()).tools}
    assert not second.is_error and second.structured_content["conversationId"] == conversation_id
    assert await Turn.objects.filter(session_id=conversation_id).acount() == 2
    uri = f"aptix://conversations/{conversation_id}"
    assert uri in alices and f"ask_{B_ONLY}" not in alice_tools

    async with mcp_client(carol_token, server=server.url) as client:
        carol_tools = {tool.name for tool in (await client.list_tools()).tools}
        refused = await client.call_tool("ask_general", {"message": "Peek", "conversationId": conversation_id})
        carols = [str(r.uri) for r in (await client.list_resources()).resources]
        with pytest.raises(MCPError) as crafted:
            await client.read_resource(uri)
    assert f"ask_{B_ONLY}" in carol_tools
    assert refused.is_error and refused.content[0].text == "No conversation with this id."
    assert uri not in carols and crafted.value.message == "No conversation with this id."
    assert await Turn.objects.filter(session_id=conversation_id).acount() == 2
    assert await AgentSession.objects.filter(pk=conversation_id).aexists()


async def test_no_token_is_refused_by_the_live_server(server):
    def post() -> tuple[int, str]:
        request = urllib.request.Request(f"{server.url}/mcp/", data=b"{}", method="POST")
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                return response.status, ""
        except urllib.error.HTTPError as exc:
            return exc.code, exc.headers.get("WWW-Authenticate", "")

    status, challenge = await asyncio.to_thread(post)
    assert status == 401 and challenge.startswith("Bearer")


DDR_REQUEST = "Write a design decision record for our new caching layer"


@pytest.mark.parametrize("decision, mode", [("approve", "ddr-authoring"), ("deny", "general")])
@pytest.mark.parametrize("protocol", ["legacy", "2026-07-28"])  # asked in the call's stream / a round trip
async def test_a_mode_change_is_asked_through_the_client(server, alice_token, decision, mode, protocol):
    """The offline model proposes DDR Authoring; a typed "2" (not a consented choice) makes it call
    agent_change_mode, which waits for approval: the client is asked with a form, and its answer decides.
    On the handshake-era protocol the form comes on the call's own stream, in the session the client
    was given for declaring elicitation (interop/mcp_server/sessions.py)."""
    asked = []

    async def answer(context, params):
        asked.append(params.message)
        return ElicitResult(action="accept", content={"decision": decision})

    async with mcp_client(alice_token, mode=protocol, server=server.url, elicitation_callback=answer) as client:
        proposal = await client.call_tool("ask_general", {"message": DDR_REQUEST, "execution": "ask"})
        assert "DDR Authoring" in proposal.content[0].text and not asked
        conversation_id = proposal.structured_content["conversationId"]
        result = await client.call_tool("ask_general", {"message": "2", "conversationId": conversation_id})
    assert len(asked) == 1 and "'ddr-authoring'" in asked[0], asked
    assert not result.is_error, result.content
    assert result.structured_content["status"] == "completed"
    assert (await AgentSession.objects.aget(pk=conversation_id)).mode == mode
    assert await ModeHistory.objects.filter(session_id=conversation_id).acount() == (decision == "approve")
