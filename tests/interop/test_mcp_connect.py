"""A turn begun over Aptix's MCP server that needs the user to connect a per-user MCP server (their own
secret) asks the calling client with a link (URL-mode elicitation) to Settings → Connections: the user
connects there and accepts, and the turn goes on with their own connection; declining goes on without
it. The per-user server is a real resource server process (tests/tools/mcp/user_server.py)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from asgiref.sync import sync_to_async
from cryptography.fernet import Fernet
from django.urls import reverse
from mcp_types import ElicitRequestURLParams, ElicitResult

from agents.models import ToolApproval, Turn
from connections.store import secrets_save
from modes.models import AgentMode
from tests.helpers import ServerLikeAsyncClient, async_db
from tests.helpers.interop import mcp_client
from tests.helpers.mcp import HttpServer, write_config
from tools.mcp.host import McpHost

pytestmark = [pytest.mark.slow, async_db]  # a real MCP server process

USER_SERVER = Path(__file__).resolve().parents[1] / "tools" / "mcp" / "user_server.py"
TOOL = "mine__my_notes"
READY = 60


@pytest.fixture
async def per_user_server(tmp_path, settings, alice):
    """The notes server acting as each user with their NOTES_TOKEN; alice connected, nobody else."""
    settings.APTIX_SECRETS_KEY = [Fernet.generate_key().decode()]
    settings.APTIX_MCP_CONFIG = str(tmp_path / "mcp.json")
    tokens = tmp_path / "tokens.json"
    tokens.write_text(json.dumps({"alice-token": {"user": "alice"}, "bob-token": {"user": "bob"}}))
    server = HttpServer()
    server.listener.listen()
    fd = server.listener.fileno()
    server.process = subprocess.Popen(
        [sys.executable, str(USER_SERVER), str(fd), server.url, str(tokens)], pass_fds=[fd]
    )
    entry = {"url": server.url, "headers": {"Authorization": "Bearer ${user:NOTES_TOKEN}"}}
    write_config(tmp_path / "mcp.json", {"mine": entry})
    await AgentMode.objects.filter(key="general").aupdate(tool_policy=["*"], approval_policy=["mine.*:auto"])
    await sync_to_async(secrets_save)(user=alice, server="mine", values={"NOTES_TOKEN": "alice-token"})
    host = McpHost(tmp_path / "mcp.json")
    host.start()
    try:
        await host.wait_until(lambda s: any(x.name == "mine" and x.tools for x in s), READY)
        yield host
    finally:
        host.stop()
        server.close()


@pytest.fixture
async def bob_token(bob):
    from aptix.tokens import api_token_create

    return (await sync_to_async(api_token_create)(user=bob, name="editor"))[1]


async def test_connecting_through_the_link_lets_the_turn_go_on(per_user_server, llm, model, bob, bob_token, settings):
    settings.APTIX_PUBLIC_URL = "https://aptix.example"
    model.reply("", tool_calls=[(TOOL, {})])
    model.reply("Your recipe.")
    asked: list = []

    async def connect_then_accept(context, params):
        asked.append(params)
        browser = ServerLikeAsyncClient()  # bob, signed in, saves his secret in Settings → Connections
        await browser.aforce_login(bob)
        saved = await browser.post(reverse("settings-connection-save", args=["mine"]), {"NOTES_TOKEN": "bob-token"})
        assert saved.status_code == 302
        return ElicitResult(action="accept")

    async with mcp_client(bob_token, mode="2026-07-28", elicitation_callback=connect_then_accept) as client:
        result = await client.call_tool("ask_general", {"message": "My notes?", "execution": "agent"})
    [link] = asked
    assert isinstance(link, ElicitRequestURLParams)
    assert link.url == "https://aptix.example/settings/#connection-mine" and "Connect mine" in link.message
    assert not result.is_error and result.content[0].text == "Your recipe.", result.content
    turn = await Turn.objects.aget(pk=result.structured_content["turnId"])
    [tool_result] = [e.payload async for e in turn.events.filter(type="tool.result")]
    assert tool_result["ok"] and "bob's secret recipe" in tool_result["result"]


async def test_accepting_without_connecting_asks_again_and_declining_goes_on_without(
    per_user_server, llm, model, bob_token
):
    first = model.reply("", tool_calls=[(TOOL, {})])
    model.reply("Without your notes, then.")
    answers = iter([ElicitResult(action="accept"), ElicitResult(action="decline")])
    asked: list = []

    async def answer(context, params):
        asked.append(params)
        return next(answers)

    async with mcp_client(bob_token, mode="2026-07-28", elicitation_callback=answer) as client:
        result = await client.call_tool("ask_general", {"message": "My notes?", "execution": "agent"})
    assert len(asked) == 2  # "accept" without a connection: still waiting, asked again
    assert result.content[0].text == "Without your notes, then."
    assert (await ToolApproval.objects.aget(tool_call_id=first.tool_calls[0].id)).decision == "denied"
