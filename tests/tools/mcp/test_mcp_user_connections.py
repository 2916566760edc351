"""MCP servers that act as each user (`${user:NAME}` in headers), against a real resource server
process (the MCP SDK's, with bearer-token verification): each user's calls go over their own
connection with their own token, so two users see only their own data; a user who has not saved the
secret is asked to connect (the turn pauses durably, kind "connect"), and saving it in Settings →
Connections lets the turn go on; declining tells the model; idle connections are closed."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import pytest
from asgiref.sync import sync_to_async
from cryptography.fernet import Fernet

from agents.approvals import UserDecision, approval_decide
from agents.models import ToolApproval, Turn
from agents.run.reasoner import Reasoner
from aptix.tokens import api_token_create
from connections.store import secrets_save
from modes.models import AgentMode
from tests.helpers import ServerLikeAsyncClient, async_db
from tests.helpers.mcp import HttpServer, write_config
from tools.mcp.host import McpHost

pytestmark = [pytest.mark.slow, async_db]

USER_SERVER = Path(__file__).resolve().parent / "user_server.py"
READY = 60
TOOL = "mine__my_notes"
URL = "/api/v1/agent/execute"
URL = "/api/v1/agent/execute"


@pytest.fixture
def secrets_key(settings):
    settings.APTIX_SECRETS_KEY = [Fernet.generate_key().decode()]


@pytest.fixture
def user_server(tmp_path):
    tokens = tmp_path / "tokens.json"
    tokens.write_text(json.dumps({"alice-token": {"user": "alice"}, "bob-token": {"user": "bob"}}))
    server = HttpServer()
    server.listener.listen()
    fd = server.listener.fileno()
    server.process = subprocess.Popen(
        [sys.executable, str(USER_SERVER), str(fd), server.url, str(tokens)], pass_fds=[fd]
    )
    yield server
    server.close()


@pytest.fixture
def start_host(tmp_path, user_server, settings, monkeypatch):
    monkeypatch.setattr("tools.mcp.userpool.SWEEP_EVERY", 0.1)  # connected users are looked for often
    settings.APTIX_MCP_CONFIG = str(tmp_path / "mcp.json")
    entry = {"url": user_server.url, "headers": {"Authorization": "Bearer ${user:NOTES_TOKEN}"}}
    write_config(tmp_path / "mcp.json", {"mine": entry})
    hosts = []

    async def start() -> McpHost:
        host = McpHost(tmp_path / "mcp.json")
        host.start()
        hosts.append(host)
        await host.wait_until(lambda s: any(x.name == "mine" and x.tools for x in s), READY)
        return host

    yield start
    for host in hosts:
        host.stop()


@pytest.fixture
async def agent_mode():
    await AgentMode.objects.filter(key="general").aupdate(tool_policy=["*"], approval_policy=["mine.*:auto"])


async def test_each_user_calls_with_their_own_token_and_sees_only_their_data(
    secrets_key, start_host, agent_mode, make_session, run_turn, model, alice, bob
):
    await sync_to_async(secrets_save)(user=alice, server="mine", values={"NOTES_TOKEN": "alice-token"})
    await sync_to_async(secrets_save)(user=bob, server="mine", values={"NOTES_TOKEN": "bob-token"})
    host = await start_host()  # learns the tools over a connected user's connection
    for user, mine, theirs in ((alice, "alice's plan", "bob's"), (bob, "bob's secret recipe", "alice's")):
        session = await make_session(execution="agent", user=user)
        model.reply("", tool_calls=[(TOOL, {})])
        model.reply("Here are your notes.")
        turn = await run_turn(session, text="My notes?")
        assert turn.status == "completed", turn.error
        [result] = [e.payload async for e in turn.events.filter(type="tool.result")]
        assert result["ok"] and mine in result["result"] and theirs not in result["result"], result
    assert sorted(host._supervisors["mine"].users()) == sorted([alice.pk, bob.pk])  # a connection each


async def test_a_user_without_the_secret_is_asked_to_connect_then_the_turn_goes_on(
    secrets_key, start_host, agent_mode, make_session, run_turn, model, alice, bob, llm
):
    await sync_to_async(secrets_save)(user=alice, server="mine", values={"NOTES_TOKEN": "alice-token"})
    await start_host()
    session = await make_session(execution="agent", user=bob)
    model.reply("", tool_calls=[(TOOL, {})])
    turn = await run_turn(session, text="My notes?")
    assert turn.status == Turn.Status.AWAITING_APPROVAL
    [waiting] = turn.state["awaiting"]
    assert waiting["kind"] == "connect" and waiting["server"] == "mine" and "NOTES_TOKEN" in waiting["reason"]
    row = await ToolApproval.objects.aget(turn=turn)
    assert row.kind == "connect" and row.decision == ""

    from agents.approvals import connect_answered

    await sync_to_async(secrets_save)(user=bob, server="mine", values={"NOTES_TOKEN": "bob-token"})
    [resumed] = await sync_to_async(connect_answered)(user=bob, server="mine")
    assert resumed.pk == turn.pk
    model.reply("Your recipe.")
    await Reasoner(llm=llm).run(turn.id)
    turn = await Turn.objects.aget(pk=turn.id)
    assert turn.status == "completed", turn.error
    [result] = [e.payload async for e in turn.events.filter(type="tool.result")]
    assert result["ok"] and "bob's secret recipe" in result["result"] and "alice" not in result["result"]


async def test_declining_to_connect_tells_the_model(
    secrets_key, start_host, agent_mode, make_session, run_turn, model, alice, bob, llm
):
    await sync_to_async(secrets_save)(user=alice, server="mine", values={"NOTES_TOKEN": "alice-token"})
    await start_host()
    session = await make_session(execution="agent", user=bob)
    model.reply("", tool_calls=[(TOOL, {})])
    turn = await run_turn(session, text="My notes?")
    [waiting] = turn.state["awaiting"]
    await sync_to_async(approval_decide)(turn=turn, decisions=[UserDecision(waiting["id"], approve=False)], user=bob)
    model.reply("Fine.")
    await Reasoner(llm=llm).run(turn.id)
    turn = await Turn.objects.aget(pk=turn.id)
    [result] = [e.payload async for e in turn.events.filter(type="tool.result")]
    assert not result["ok"] and "did not connect" in result["error"]


async def test_a_users_idle_connection_is_closed(secrets_key, start_host, alice):
    await sync_to_async(secrets_save)(user=alice, server="mine", values={"NOTES_TOKEN": "alice-token"})
    host = await start_host()
    pool = host._supervisors["mine"]
    assert pool.users() == [alice.pk]
    pool.idle_seconds = 0.05
    for _ in range(200):
        if not pool.users():
            break
        await asyncio.sleep(0.05)
    assert pool.users() == []
    assert host.status()[0].tools == (TOOL,)  # its tools stay offered


async def test_the_api_reports_a_connect_and_takes_decline(secrets_key, start_host, agent_mode, model, alice, bob, llm):
    await sync_to_async(secrets_save)(user=alice, server="mine", values={"NOTES_TOKEN": "alice-token"})
    await start_host()
    _, token = await sync_to_async(api_token_create)(user=bob, name="ci")
    client = ServerLikeAsyncClient()
    auth = {"Authorization": f"Bearer {token}"}

    async def post(body):
        answer = await client.post(URL, data=json.dumps(body), content_type="application/json", headers=auth)
        return json.loads(answer.content)

    first = model.reply("", tool_calls=[(TOOL, {})])
    body = await post({"message": "My notes?", "execution": "agent"})
    assert body["status"] == "awaiting_approval", body
    call_id = first.tool_calls[0].id
    [asked] = body["approvals"]
    assert asked["kind"] == "connect" and asked["toolCallId"] == call_id and asked["server"] == "mine"
    assert asked["connectUrl"].endswith("/settings/#connection-mine")
    model.reply("Without your notes, then.")
    body = await post(
        {"conversationId": body["conversationId"], "approvals": [{"toolCallId": call_id, "decision": "decline"}]}
    )
    assert body.get("status") == "completed" and body["answer"] == "Without your notes, then.", body


async def test_the_tools_panel_says_who_is_connected(secrets_key, start_host, make_session, alice, bob):
    from agents.web.toolpanel import tool_panel

    await sync_to_async(secrets_save)(user=alice, server="mine", values={"NOTES_TOKEN": "alice-token"})
    await start_host()
    for user, complete in ((alice, True), (bob, False)):
        session = await make_session(execution="agent", user=user)
        panel = await sync_to_async(tool_panel)(session)
        [group] = [g for g in panel["servers"] if g.name == "mine"]
        assert group.connection.complete is complete
        assert group.connect_url.endswith("/settings/#connection-mine")
