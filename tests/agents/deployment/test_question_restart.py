"""An MCP server's question (elicitation) waiting when the Aptix process dies, with real processes:
`manage.py aptix_serve` on the test database, the MCP server tests/tools/mcp/ask_server.py and a
scripted model on loopback; the Aptix process is SIGKILLed while the turn waits for the answer.

- Over stdio (the server dies with its host; its call was held open in the killed process): the next
  Aptix process ends the waiting turn at start-up with a message saying the question cannot be
  answered any more (it does not stay `awaiting_approval` with a card nobody can answer), and
  closes the question's audit row.
- Over streamable HTTP with the 2026-07-28 multi round-trip (the question came as an "input
  required" answer: no call stays open): the turn still waits after the restart, the answer given to
  the new process resumes it, and the server gets the call again with the answer."""

from __future__ import annotations

import ast
import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import httpx2
import pytest
from asgiref.sync import sync_to_async

from agents.elicitations import ERROR_LOST
from agents.models import ToolApproval, Turn, TurnEvent
from aptix.tokens import api_token_create
from modes.models import AgentMode
from tests.browser.live import LiveServer
from tests.helpers import async_db
from tests.helpers.mcp import HttpServer
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
def http_ask():
    server = HttpServer()
    server.listener.listen()
    fd = server.listener.fileno()
    server.process = subprocess.Popen([sys.executable, str(ASK), "--http", str(fd)], pass_fds=[fd])
    yield server
    server.close()


@contextlib.asynccontextmanager
async def _live(tmp_path: Path, entry: dict) -> AsyncIterator[tuple[LiveServer, ScriptedModel]]:
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"ask": entry}}))
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


@pytest.fixture
async def live(tmp_path):
    async with _live(tmp_path, {"command": sys.executable, "args": [str(ASK)]}) as running:
        yield running


async def _ask(server: LiveServer, model: ScriptedModel, secret: str) -> dict:
    """A turn whose tool asks: its API answer (the turn waits for the question's answer)."""
    model.reply("", tool_calls=[("ask__profile", {})])
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
    return body


async def _kill_and_restart(server: LiveServer) -> None:
    os.killpg(server.process.pid, signal.SIGKILL)  # the run, its calls and its stdio servers go at once
    await asyncio.to_thread(server.process.wait, 10)
    port = server.port
    server.process = None
    await asyncio.to_thread(server.start, port)


async def test_a_question_of_a_stdio_server_ends_the_turn_saying_so_after_a_restart(live, alice):
    server, model = live
    await asyncio.to_thread(server.start)
    _, secret = await sync_to_async(api_token_create)(user=alice)
    turn_id = (await _ask(server, model, secret))["turnId"]
    await _kill_and_restart(server)
    try:
        turn = await _until(turn_id, Turn.Status.FAILED, Turn.Status.COMPLETED)
    except TimeoutError:
        pytest.fail(f"turn still {(await Turn.objects.aget(pk=turn_id)).status}; log:\n{server.log_text()[-3000:]}")
    assert turn.error == ERROR_LOST
    row = await ToolApproval.objects.aget(turn_id=turn_id)
    assert row.kind == "elicitation" and not row.is_pending  # the card goes with it
    last = await turn.events.order_by("-seq").afirst()
    assert last.type == "turn.failed" and last.payload["error"] == ERROR_LOST


async def test_a_question_of_an_http_server_survives_a_restart_and_its_answer_resumes_the_call(
    tmp_path, http_ask, alice
):
    async with _live(tmp_path, {"url": http_ask.url}) as (server, model):
        await asyncio.to_thread(server.start)
        _, secret = await sync_to_async(api_token_create)(user=alice)
        body = await _ask(server, model, secret)
        turn_id, [question] = body["turnId"], body["approvals"]
        assert question["schema"]["properties"]["name"]["title"] == "Name"
        await _kill_and_restart(server)
        await asyncio.sleep(3)  # past the new process's start-up sweep
        assert (await Turn.objects.aget(pk=turn_id)).status == Turn.Status.AWAITING_APPROVAL

        model.reply("Thanks, Ada.")
        answer = {"toolCallId": question["toolCallId"], "decision": "accept", "content": {"name": "Ada", "age": 36}}
        async with httpx2.AsyncClient(base_url=server.url, timeout=60) as client:
            response = await client.post(
                "/api/v1/agent/execute",
                json={"conversationId": body["conversationId"], "approvals": [answer]},
                headers={"Authorization": f"Bearer {secret}"},
            )
        done = response.json()
        assert done["status"] == "completed" and done["answer"] == "Thanks, Ada.", (done, server.log_text()[-3000:])
    result = await TurnEvent.objects.filter(turn_id=turn_id, type="tool.result").aget()
    action, _, content = result.payload["result"].partition(" ")  # ask_server.py: "<action> <content>"
    # compared as data: the answer went through PostgreSQL's jsonb, which keeps no key order
    assert result.payload["ok"] and action == "accept"
    assert ast.literal_eval(content) == {"name": "Ada", "age": 36, "subscribe": False}
    row = await ToolApproval.objects.aget(turn_id=turn_id)
    assert row.decision == "accepted" and row.decided_by_id == alice.pk
