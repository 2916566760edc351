"""An MCP server's question that survives a restart of the web process, in a real browser: the
server (tests/tools/mcp/ask_server.py over streamable HTTP, a process of the test's own) asks in a
2026-07-28 multi round-trip, so no call stays open while the user thinks; the live server is
restarted while the card waits, the page is opened again, the card is still there, and Send resumes
the turn: the server gets the call again with the answer and the turn goes on to its end."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from asgiref.sync import sync_to_async

from agents.models import ToolApproval
from agents.sessions import session_create
from modes.models import AgentMode
from tests.helpers import async_db
from tests.helpers.mcp import HttpServer

from .live import ROOT, expect, open_session, scripted_env, send, turn_ended, turns

pytestmark = [pytest.mark.asyncio(loop_scope="session"), async_db]

ASK_SERVER = ROOT / "tests" / "tools" / "mcp" / "ask_server.py"


@pytest.fixture(scope="module")
def http_ask():
    server = HttpServer()
    server.listener.listen()
    fd = server.listener.fileno()
    server.process = subprocess.Popen([sys.executable, str(ASK_SERVER), "--http", str(fd)], pass_fds=[fd])
    yield server
    server.close()


@pytest.fixture(scope="module")
def daphne_env(switchboard, http_ask, tmp_path_factory) -> dict[str, str]:
    config = tmp_path_factory.mktemp("mcp") / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"ask": {"url": http_ask.url}}}))
    return {**scripted_env(switchboard), "APTIX_MCP_AUTOSTART": "true", "APTIX_MCP_CONFIG": str(config)}


async def wait_for_server(page, session_id: str) -> None:
    """The MCP servers start in the background with Daphne: reload until the Tools panel says ready."""
    for _ in range(60):
        state = page.locator("#tools-body .server-head:has(strong:text-is('ask')) .state")
        if await state.count() and "state-ready" in (await state.get_attribute("class") or ""):
            return
        await page.wait_for_timeout(250)  # polling a server-side state the page only shows on load
        await open_session(page, session_id)
    raise AssertionError("MCP server ask never became ready")


async def test_the_card_outlives_a_restart_and_send_resumes_the_call(sign_in, alice, team_a, model, daphne_server):
    await AgentMode.objects.filter(key="general").aupdate(tool_policy=["*"])
    session = await sync_to_async(session_create)(team=team_a, user=alice, mode="general", execution="agent")
    page = await sign_in(alice)
    model.reply("", tool_calls=[("ask__profile", {})])
    await open_session(page, session.id)
    await wait_for_server(page, session.id)
    await send(page, "Ask me")
    await expect(turns(page).last.locator(".approval-card")).to_contain_text("Tell me about you")

    daphne_server.restart()  # the web process goes; nothing held the call
    await open_session(page, session.id)
    card = turns(page).last.locator(".approval-card")
    await expect(card).to_contain_text("Tell me about you")
    model.reply("Thanks, Ada.")
    await card.get_by_label("Name (required)").fill("Ada")
    await card.get_by_role("button", name="Send").click()
    turn = turns(page).last
    await turn_ended(turn)
    await expect(turn).to_contain_text("Thanks, Ada.")
    await expect(turn.locator(".approval-card")).to_contain_text("Answered by alice")
    row = await ToolApproval.objects.aget(turn__session_id=session.id)
    assert row.decision == "accepted" and row.content["name"] == "Ada"
    assert "accept {'name': 'Ada'" in json.dumps(model.last_messages)
