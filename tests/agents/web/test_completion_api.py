"""Argument completion for the composer's prompt form and the JSON API (`POST /mcp/complete/<server>/`,
signed in and CSRF-checked; `POST /api/v1/mcp/complete/<server>`): `{"values", "hasMore"}` from a real
server as the user types, auth first, only for servers the user may use (another user's per-user
server is refused before it is asked), nothing from a server without the capability; the composer
carries the hook the form's <datalist> asks through."""

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
API = "/api/v1/mcp/complete"


@pytest.fixture
def serve(tmp_path, settings, monkeypatch):
    """Run a host over `servers` as this process's host (what the views read)."""
    monkeypatch.setattr("tools.mcp.userpool.SWEEP_EVERY", 0.1)
    settings.APTIX_SECRETS_KEY = [Fernet.generate_key().decode()]
    settings.APTIX_MCP_CONFIG = str(tmp_path / "mcp.json")
    hosts = []
    previous = host_module._host

    async def start(servers: dict) -> McpHost:
        host = McpHost(write_config(tmp_path / "mcp.json", servers))
        hosts.append(host)
        host.start()
        await host.wait_until(lambda statuses: all(s.prompts for s in statuses), START_TIMEOUT)
        host_module._host = host
        return host

    yield start
    host_module._host = previous
    for host in hosts:
        host.stop()


def guide(**extra) -> dict:
    return {"command": sys.executable, "args": [str(GUIDE)], **extra}


def typed(argument: str, value: str, prompt: str = "greeting") -> dict:
    return {"ref": {"type": "prompt", "name": prompt}, "argument": {"name": argument, "value": value}}


async def token_of(user) -> dict[str, str]:
    _, token = await sync_to_async(api_token_create)(user=user, name="ci")
    return {"Authorization": f"Bearer {token}"}


async def test_the_api_completes_a_prompts_argument(serve, alice, auditor):
    await serve({"guide": guide(), "quiet": guide(env={"GUIDE_COMPLETIONS": "off"})})
    client, auth = ServerLikeAsyncClient(), await token_of(alice)

    async def post(server: str, body, headers=auth):
        return await client.post(f"{API}/{server}", body, content_type="application/json", headers=headers)

    answer = await post("guide", typed("name", "a"))
    assert answer.status_code == 200 and answer.json() == {"values": ["Ada", "Alan"], "hasMore": False}
    assert (await post("guide", typed("name", ""))).json() == {"values": ["Ada", "Alan"], "hasMore": True}
    with_context = {**typed("tone", ""), "context": {"arguments": {"name": "Grace"}}}
    assert (await post("guide", with_context)).json()["values"] == ["formal"]
    template = {"ref": {"type": "resource", "uri": "guide://people/{name}"}, "argument": {"name": "name", "value": "B"}}
    assert (await post("guide", template)).json() == {"values": ["Barbara"], "hasMore": False}
    # a server without the capability: nothing, not an error
    assert (await post("quiet", typed("name", "a"))).json() == {"values": [], "hasMore": False}

    unknown = await post("guide", typed("name", "a", prompt="farewell"))
    assert unknown.status_code == 404 and unknown.json()["error"]["field"] == "ref.name"
    wrong = await post("guide", typed("mood", "a"))
    assert wrong.status_code == 400 and wrong.json()["error"]["field"] == "argument.name"
    assert (await post("nobody", typed("name", "a"))).status_code == 404
    assert (await client.get(f"{API}/guide", headers=auth)).status_code == 405
    assert (await post("guide", typed("name", "a"), headers={})).status_code == 401
    assert (await post("guide", typed("name", "a"), headers=await token_of(auditor))).status_code == 403  # no team


async def test_the_prompt_form_asks_the_same_signed_in_with_csrf(serve, alice, password):
    await serve({"guide": guide()})
    page = ServerLikeAsyncClient(enforce_csrf_checks=True)
    body = json.dumps(typed("tone", "w"))
    signed_out = await ServerLikeAsyncClient().post("/mcp/complete/guide/", body, content_type="application/json")
    assert signed_out.status_code == 401 and "signed out" in signed_out.json()["error"]["message"]  # not a redirect
    await sync_to_async(page.login)(username=alice.username, password=password)
    assert (await page.post("/mcp/complete/guide/", body, content_type="application/json")).status_code == 403
    home = await page.get("/")
    # the composer names the endpoint the prompt form's <datalist> asks (static/js/prompts.js)
    assert 'data-complete-url="/mcp/complete/SERVER/"' in home.content.decode()
    csrf = home.cookies["csrftoken"].value
    answer = await page.post(
        "/mcp/complete/guide/", body, content_type="application/json", headers={"X-CSRFToken": csrf}
    )
    assert answer.status_code == 200 and answer.json() == {"values": ["warm"], "hasMore": False}
    bad = await page.post("/mcp/complete/guide/", "{", content_type="application/json", headers={"X-CSRFToken": csrf})
    assert bad.status_code == 400


async def test_another_users_per_user_server_is_refused_before_it_is_asked(serve, alice, bob):
    await sync_to_async(secrets_save)(user=alice, server="mine", values={"GUIDE_TOKEN": "alice's"})
    host = await serve({"mine": guide(env={"GUIDE_TOKEN": "${user:GUIDE_TOKEN}"})})
    pool = host._supervisors["mine"]
    assert isinstance(pool, UserPool)
    client = ServerLikeAsyncClient()

    refused = await client.post(
        f"{API}/mine", typed("name", "G"), content_type="application/json", headers=await token_of(bob)
    )
    assert refused.status_code == 404 and refused.json()["error"]["field"] == "server"
    assert bob.pk not in pool.users()
    answer = await client.post(
        f"{API}/mine", typed("name", "G"), content_type="application/json", headers=await token_of(alice)
    )
    assert answer.json() == {"values": ["Grace"], "hasMore": False} and pool.users() == [alice.pk]
