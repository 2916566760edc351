"""A per-user MCP server in the 2 + 2 deployment (2 web processes, 2 workers, PostgreSQL and Redis):
each user's turn runs on a worker, whose MCP host calls the server with that user's own secret (a
real resource server process checking bearer tokens), so each sees only their own data."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import httpx2
import pytest
from asgiref.sync import sync_to_async
from cryptography.fernet import Fernet
from django.conf import settings as django_settings
from django.db import connection

from agents.sessions import session_create
from aptix.tokens import api_token_create
from connections.store import secrets_save
from modes.models import AgentMode
from tests.helpers import async_db
from tests.helpers import deployment as multi
from tests.helpers.mcp import HttpServer
from tests.helpers.worker_process import REDIS_URL

pytestmark = [pytest.mark.slow, async_db]

USER_SERVER = Path(__file__).resolve().parents[2] / "tools" / "mcp" / "user_server.py"


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


async def test_a_per_user_call_runs_on_a_worker_with_the_turns_users_secret(
    tmp_path, user_server, settings, alice, bob, team_a
):
    if not REDIS_URL or connection.vendor != "postgresql":
        pytest.skip("needs Redis and PostgreSQL (make test starts both)")
    key = Fernet.generate_key().decode()
    settings.APTIX_SECRETS_KEY = [key]
    config = tmp_path / "mcp.json"
    entry = {"url": user_server.url, "headers": {"Authorization": "Bearer ${user:NOTES_TOKEN}"}}
    config.write_text(json.dumps({"mcpServers": {"mine": entry}}))
    await AgentMode.objects.filter(key="general").aupdate(tool_policy=["*"], approval_policy=["mine.*:auto"])
    for user, token in ((alice, "alice-token"), (bob, "bob-token")):
        await sync_to_async(secrets_save)(user=user, server="mine", values={"NOTES_TOKEN": token})
    running = multi.deployment(
        tmp_path,
        redis_url=REDIS_URL,
        secret_key=django_settings.SECRET_KEY,
        heartbeat=2.0,
        APTIX_MCP_CONFIG=str(config),
        APTIX_MCP_AUTOSTART="true",
        APTIX_SECRETS_KEY=key,
    )
    async with running as started:
        try:
            for user, mine, theirs in ((alice, "alice's plan", "bob"), (bob, "bob's secret recipe", "alice")):
                _, secret = await sync_to_async(api_token_create)(user=user, name="ci")
                session = await sync_to_async(session_create)(team=team_a, user=user, execution="agent")
                started.model.reply("", tool_calls=[("mine__my_notes", {})])
                started.model.reply("Here are your notes.")
                async with httpx2.AsyncClient(base_url=started.webs[0].url, timeout=120) as client:
                    answer = await client.post(
                        "/api/v1/agent/execute",
                        json={"conversationId": session.id, "message": "My notes?", "execution": "agent"},
                        headers={"Authorization": f"Bearer {secret}"},
                    )
                body = answer.json()
                assert body["status"] == "completed", body
                result = await sync_to_async(
                    lambda session=session: session.turns.get().events.get(type="tool.result").payload
                )()
                assert result["ok"] and mine in result["result"] and theirs not in result["result"], result
        finally:
            for log in started.logs():
                print(f"--- {log}:", *multi.warnings_in(log), sep="\n")
