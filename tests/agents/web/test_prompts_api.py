"""The MCP servers' prompts over the JSON API (`GET /api/v1/mcp/prompts`, `POST
/api/v1/mcp/prompts/<server>/<name>`) and for the composer's `/` menu (`/mcp/prompts/`, signed in,
CSRF-checked): listed for team members, got with their arguments (bad ones refused naming the
argument), and a per-user server's prompts only for a user who has connected it, got over that
user's own connection."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from asgiref.sync import sync_to_async
from cryptography.fernet import Fernet

from aptix.tokens import api_token_create
from connections.store import secrets_save
from tests.helpers import ServerLikeAsyncClient, async_db
from tests.helpers.mcp import START_TIMEOUT, write_config
from tools.mcp import host as host_module
from tools.mcp.host import McpHost
from tools.mcp.userpool import UserPool

pytestmark = [async_db, pytest.mark.slow]  # real MCP server processes

GUIDE = Path(__file__).resolve().parents[2] / "tools" / "mcp" / "guide_server.py"
LIST = "/api/v1/mcp/prompts"


@pytest.fixture
def serve(tmp_path, settings, monkeypatch):
    """Run a host over `servers` as this process's host (what the views read)."""
    monkeypatch.setattr("tools.mcp.userpool.SWEEP_EVERY", 0.1)
    settings.APTIX_SECRETS_KEY = [Fernet.generate_key().decode()]
    settings.APTIX_MCP_CONFIG = str(tmp_path / "mcp.json")
    hosts = []
    previous = host_module._host

    async def start(servers: dict, ready) -> McpHost:
        host = McpHost(write_config(tmp_path / "mcp.json", servers))
        hosts.append(host)
        host.start()
        await host.wait_until(ready, START_TIMEOUT)
        host_module._host = host
        return host

    yield start
    host_module._host = previous
    for host in hosts:
        host.stop()


def guide(**extra) -> dict:
    return {"command": sys.executable, "args": [str(GUIDE)], **extra}


def prompts_listed(statuses) -> bool:
    return all(s.prompts for s in statuses)


async def token_of(user) -> dict[str, str]:
    _, token = await sync_to_async(api_token_create)(user=user, name="ci")
    return {"Authorization": f"Bearer {token}"}


async def test_prompts_are_listed_and_got_over_the_api(serve, alice, auditor):
    await serve({"guide": guide()}, prompts_listed)
    client, auth = ServerLikeAsyncClient(), await token_of(alice)

    listed = (await client.get(LIST, headers=auth)).json()["prompts"]
    assert [(p["server"], p["name"], p["title"]) for p in listed] == [
        ("guide", "greeting", "Greeting"),
        ("guide", "house-style", "House style"),
    ]
    assert [(a["name"], a["required"]) for a in listed[0]["arguments"]] == [("name", True), ("tone", False)]

    answer = await client.post(
        f"{LIST}/guide/greeting", {"arguments": {"name": "Ada"}}, content_type="application/json", headers=auth
    )
    assert answer.status_code == 200
    assert answer.json() == {
        "server": "guide",
        "name": "greeting",
        "description": "Write a greeting for someone.",
        "messages": [{"role": "user", "content": {"type": "text", "text": "Write a warm greeting for Ada."}}],
        "text": "Write a warm greeting for Ada.",
    }

    missing = await client.post(f"{LIST}/guide/greeting", {}, content_type="application/json", headers=auth)
    assert missing.status_code == 400
    assert missing.json() == {"error": {"message": '"name" is required.', "field": "arguments.name"}}
    unknown = await client.post(f"{LIST}/guide/farewell", {}, content_type="application/json", headers=auth)
    assert unknown.status_code == 404 and unknown.json()["error"]["field"] == "name"
    assert (await client.get(f"{LIST}/guide/greeting", headers=auth)).status_code == 405
    assert (await client.get(LIST)).status_code == 401
    nobody = await client.get(LIST, headers=await token_of(auditor))  # in no team
    assert nobody.status_code == 403


async def test_the_composer_menu_reads_the_same_for_the_signed_in_user(serve, alice, password):
    await serve({"guide": guide()}, prompts_listed)
    page = ServerLikeAsyncClient(enforce_csrf_checks=True)
    assert (await page.get("/mcp/prompts/")).status_code == 401  # a JSON refusal, not a login redirect
    await sync_to_async(page.login)(username=alice.username, password=password)

    listed = (await page.get("/mcp/prompts/")).json()["prompts"]
    assert [p["name"] for p in listed] == ["greeting", "house-style"]
    body = json.dumps({"arguments": {"name": "Ada", "tone": "cheerful"}})
    refused = await page.post("/mcp/prompts/guide/greeting", body, content_type="application/json")
    assert refused.status_code == 403  # no CSRF token
    csrf = (await page.get("/")).cookies["csrftoken"].value
    answer = await page.post(
        "/mcp/prompts/guide/greeting", body, content_type="application/json", headers={"X-CSRFToken": csrf}
    )
    assert answer.status_code == 200 and answer.json()["text"] == "Write a cheerful greeting for Ada."


async def test_a_per_user_servers_prompts_are_for_those_who_connected_it(serve, alice, bob):
    await sync_to_async(secrets_save)(user=alice, server="mine", values={"GUIDE_TOKEN": "alice's"})
    host = await serve({"mine": guide(env={"GUIDE_TOKEN": "${user:GUIDE_TOKEN}"})}, prompts_listed)
    pool = host._supervisors["mine"]
    assert isinstance(pool, UserPool)
    client = ServerLikeAsyncClient()

    assert [p["name"] for p in (await client.get(LIST, headers=await token_of(alice))).json()["prompts"]] == [
        "greeting",
        "house-style",
    ]
    assert (await client.get(LIST, headers=await token_of(bob))).json()["prompts"] == []
    body = {"arguments": {"name": "Bea"}}
    answer = await client.post(
        f"{LIST}/mine/greeting", body, content_type="application/json", headers=await token_of(alice)
    )
    assert answer.json()["text"] == "Write a warm greeting for Bea." and pool.users() == [alice.pk]
    refused = await client.post(
        f"{LIST}/mine/greeting", body, content_type="application/json", headers=await token_of(bob)
    )
    assert refused.status_code == 404 and pool.users() == [alice.pk]  # bob's never reaches the server
