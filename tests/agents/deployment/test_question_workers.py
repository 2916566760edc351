"""MCP servers' questions in the 2 + 2 deployment (2 web processes, 2 workers, PostgreSQL and Redis):
a question an HTTP server asks in a 2026-07-28 multi round-trip outlives both workers (SIGKILLed and
started again) and its answer, given through the other web process, resumes the call on a worker; a
stdio server's question, held open by the worker that ran the turn, ends the turn with a message
saying it was lost once that worker is killed (its claim expires), with the question closed."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import httpx2
import pytest
from asgiref.sync import sync_to_async
from django.conf import settings as django_settings
from django.db import connection

from agents.elicitations import ERROR_LOST
from agents.models import ToolApproval, Turn, TurnEvent
from aptix.tokens import api_token_create
from modes.models import AgentMode
from tests.helpers import async_db
from tests.helpers import deployment as multi
from tests.helpers.mcp import HttpServer
from tests.helpers.worker_process import REDIS_URL

pytestmark = [pytest.mark.slow, async_db]

ASK = Path(__file__).resolve().parents[2] / "tools" / "mcp" / "ask_server.py"
TIMEOUT = 60.0


@pytest.fixture
def http_ask():
    server = HttpServer()
    server.listener.listen()
    fd = server.listener.fileno()
    server.process = subprocess.Popen([sys.executable, str(ASK), "--http", str(fd)], pass_fds=[fd])
    yield server
    server.close()


async def _execute(client: httpx2.AsyncClient, secret: str, body: dict) -> dict:
    answer = await client.post("/api/v1/agent/execute", json=body, headers={"Authorization": f"Bearer {secret}"})
    return answer.json()


async def _stdio_ready(workers: list[multi.Worker], offsets: list[int]) -> None:
    """Wait until every worker (started again after `offsets` in its log) has its stdio server up: a
    turn offers only the tools of servers that are ready."""
    async with asyncio.timeout(TIMEOUT):
        while not all(
            'MCP server \\"askio\\": ready' in worker.log.read_text(errors="replace")[offset:]
            for worker, offset in zip(workers, offsets, strict=True)
        ):
            await asyncio.sleep(0.2)


async def test_questions_across_worker_restarts(tmp_path, http_ask, alice):
    if not REDIS_URL or connection.vendor != "postgresql":
        pytest.skip("needs Redis and PostgreSQL (make test starts both)")
    config = tmp_path / "mcp.json"
    servers = {"ask": {"url": http_ask.url}, "askio": {"command": sys.executable, "args": [str(ASK)]}}
    config.write_text(json.dumps({"mcpServers": servers}))
    await AgentMode.objects.filter(key="general").aupdate(tool_policy=["*"])
    _, secret = await sync_to_async(api_token_create)(user=alice, name="ci")
    running = multi.deployment(
        tmp_path,
        redis_url=REDIS_URL,
        secret_key=django_settings.SECRET_KEY,
        heartbeat=1.0,
        APTIX_MCP_CONFIG=str(config),
        APTIX_MCP_AUTOSTART="true",
    )
    async with running as started:
        try:
            first, second = (httpx2.AsyncClient(base_url=web.url, timeout=120) for web in started.webs)
            async with first, second:
                # Over HTTP: nothing holds the question; the workers may go.
                started.model.reply("", tool_calls=[("ask__profile", {})])
                body = await _execute(first, secret, {"message": "Ask me", "execution": "agent"})
                assert body["status"] == "awaiting_approval", body
                [question] = body["approvals"]
                offsets = [worker.log.stat().st_size for worker in started.workers]
                for worker in started.workers:
                    await worker.restart()
                await asyncio.sleep(4)  # several sweeps of the new workers and the web processes
                assert (await Turn.objects.aget(pk=body["turnId"])).status == Turn.Status.AWAITING_APPROVAL
                started.model.reply("Thanks, Ada.")
                answer = {"toolCallId": question["toolCallId"], "decision": "accept", "content": {"name": "Ada"}}
                done = await _execute(second, secret, {"conversationId": body["conversationId"], "approvals": [answer]})
                assert done["status"] == "completed" and done["answer"] == "Thanks, Ada.", done
                result = await TurnEvent.objects.filter(turn_id=body["turnId"], type="tool.result").aget()
                assert result.payload["result"].startswith("accept {'name': 'Ada'")

                # Over stdio: the worker holding the call goes, and the question with it.
                await _stdio_ready(started.workers, offsets)
                started.model.reply("", tool_calls=[("askio__profile", {})])
                body = await _execute(first, secret, {"message": "Ask me again", "execution": "agent"})
                assert body["status"] == "awaiting_approval", body
                for worker in started.workers:
                    await worker.restart()
                async with asyncio.timeout(TIMEOUT):
                    while (turn := await Turn.objects.aget(pk=body["turnId"])).status != Turn.Status.FAILED:
                        await asyncio.sleep(0.2)
                assert turn.error == ERROR_LOST
                assert not (await ToolApproval.objects.aget(turn_id=turn.pk)).is_pending
        finally:
            for log in started.logs():
                print(f"--- {log}:", *multi.warnings_in(log), sep="\n")
