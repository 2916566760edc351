"""An MCP server's question (elicitation) waiting when the process that holds the call dies, with real
processes: `manage.py aptix_serve` on the test database, its MCP server (tests/tools/mcp/ask_server.py,
over stdio: it dies with its host) and a scripted model on loopback. The server process is SIGKILLed
while the turn waits for the answer; the next server ends the waiting turn at start-up with a message
saying the question cannot be answered any more (it does not stay `awaiting_approval` with a card
nobody can answer), and closes the question's audit row."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import sys
from pathlib import Path

import httpx2
import pytest
from asgiref.sync import sync_to_async

from agents.elicitations import ERROR_LOST
from agents.models import ToolApproval, Turn
from aptix.tokens import api_token_create
from modes.models import AgentMode
from tests.browser.live import LiveServer
from tests.helpers import async_db
from tests.helpers.scripted_model import ScriptedModel, loopback_server

pytestmark = [pytest.mark.slow, async_db]

ASK = Path(__file__).resolve().parents[2] / "tools" / "mcp" / "ask_server.py"
TIMEOUT = 40.0


async def _until(turn_id: str, *statuses: str) -> Turn:
    """The server is another process: the database is the only place to watch."""
    async with asyncio.timeout(TIMEOUT):
        while (turn := await Turn.objects.aget(pk=turn_id)).status not in statuses:
            await asyncio.sleep(0.1)
    return turn


async def _ready(client: httpx2.AsyncClient, secret: str) -> None:
    """Wait until the server's MCP server is ready (it starts in the background)."""
    async with asyncio.timeout(TIMEOUT):
        while True:
            servers = (await client.get("/api/v1/mcp/servers", headers={"Authorization": f"Bearer {secret}"})).json()
            if any(s["name"] == "ask" and s["state"] == "ready" for s in servers):
                return
            await asyncio.sleep(0.2)


@pytest.fixture
async def live(tmp_path):
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"ask": {"command": sys.executable, "args": [str(ASK)]}}}))
    await AgentMode.objects.filter(key="general").aupdate(tool_policy=["*"])
    model = ScriptedModel()
    async with loopback_server(model) as url:
        env = {
            "OPENAI_BASE_URL": f"{url}/v1",
            "OPENAI_API_KEY": "test",
            "APTIX_LLM_MAX_RETRIES": "0",
            "APTIX_MCP_CONFIG": str(config),
            "APTIX_MCP_AUTOSTART": "true",
        }
        server = LiveServer(var_dir=tmp_path / "live", env=env)
        try:
            yield server, model
        finally:
            await asyncio.to_thread(server.stop)


async def test_a_question_of_a_stdio_server_ends_the_turn_saying_so_after_a_restart(live, alice):
    server, model = live
    await asyncio.to_thread(server.start)
    model.reply("", tool_calls=[("ask__profile", {})])
    _, secret = await sync_to_async(api_token_create)(user=alice)
    async with httpx2.AsyncClient(base_url=server.url, timeout=60) as client:
        await _ready(client, secret)
        answer = await client.post(
            "/api/v1/agent/execute",
            json={"message": "Ask me", "execution": "agent"},
            headers={"Authorization": f"Bearer {secret}"},
        )
    body = answer.json()
    assert body["status"] == "awaiting_approval" and body["approvals"][0]["kind"] == "elicitation", (
        body,
        server.log_text()[-3000:],
    )
    turn_id = body["turnId"] if "turnId" in body else (await Turn.objects.filter(session__user=alice).afirst()).pk

    os.killpg(server.process.pid, signal.SIGKILL)  # the run, its call and the stdio server go at once
    await asyncio.to_thread(server.process.wait, 10)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(server.process.pid, signal.SIGKILL)
    assert (await Turn.objects.aget(pk=turn_id)).status == Turn.Status.AWAITING_APPROVAL

    port = server.port
    server.process = None
    await asyncio.to_thread(server.start, port, wait_ready=False)
    try:
        turn = await _until(turn_id, Turn.Status.FAILED, Turn.Status.COMPLETED)
    except TimeoutError:
        pytest.fail(f"turn still {(await Turn.objects.aget(pk=turn_id)).status}; log:\n{server.log_text()[-3000:]}")
    assert turn.error == ERROR_LOST
    row = await ToolApproval.objects.aget(turn_id=turn_id)
    assert row.kind == "elicitation" and not row.is_pending  # the card goes with it
    last = await turn.events.order_by("-seq").afirst()
    assert last.type == "turn.failed" and last.payload["error"] == ERROR_LOST
