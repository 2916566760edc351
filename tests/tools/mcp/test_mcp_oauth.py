"""MCP servers behind OAuth (`"auth": {"type": "oauth"}`), against real processes: the MCP SDK's
resource server (tests/tools/mcp/user_server.py, its tokens checked at the provider) and the test
authorization server (tests/oidc_provider/, django-oauth-toolkit, PKCE required). Discovery from the
401 challenge, the authorization code with PKCE S256, `state` and `resource`, the callback storing the
tokens sealed for that user, a call as that user, refresh before expiry, a revoked token that asks to
connect again, another user's pause, the state bound to its user, disconnect, and the API's list."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
import requests
from asgiref.sync import sync_to_async
from cryptography.fernet import Fernet
from django.core.cache import cache

from agents.models import Turn
from aptix.tokens import api_token_create
from connections.models import ConnectionEvent
from connections.store import tokens_get, tokens_save
from modes.models import AgentMode
from tests.helpers import ServerLikeAsyncClient, async_db
from tests.helpers.mcp import HttpServer, write_config
from tools.mcp.host import McpHost

pytestmark = [pytest.mark.slow, async_db]

USER_SERVER = Path(__file__).resolve().parent / "user_server.py"
TOOL = "mine__my_notes"
READY = 60


@pytest.fixture
def provider(oidc_provider):
    for name in ("alice", "bob"):
        oidc_provider.user(name)
    return oidc_provider


@pytest.fixture
def oauth_server(tmp_path, provider, settings):
    settings.DEBUG = True  # http:// and loopback for the metadata and authorization URLs (tests only)
    settings.APTIX_SECRETS_KEY = [Fernet.generate_key().decode()]
    server = HttpServer()
    server.listener.listen()
    fd = server.listener.fileno()
    server.process = subprocess.Popen(
        [sys.executable, str(USER_SERVER), str(fd), server.url, f"--issuer={provider.issuer}"], pass_fds=[fd]
    )
    settings.APTIX_MCP_CONFIG = str(tmp_path / "mcp.json")
    auth = {"type": "oauth", "clientId": "aptix-mcp", "scopes": ["openid", "profile"]}
    write_config(tmp_path / "mcp.json", {"mine": {"url": server.url, "auth": auth}})
    yield server
    server.close()


@pytest.fixture
def start_host(tmp_path, oauth_server, monkeypatch):
    monkeypatch.setattr("tools.mcp.userpool.SWEEP_EVERY", 0.1)
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


async def signed_in(user) -> ServerLikeAsyncClient:
    client = ServerLikeAsyncClient()
    await sync_to_async(client.force_login)(user)
    return client


async def connect(client, provider, username) -> str:
    """The flow as the browser makes it: Aptix's connect URL, the provider's login, the callback."""
    answer = await client.get("/mcp/oauth/connect/mine/")
    assert answer.status_code == 302, answer.content
    location = answer["Location"]
    callback = await asyncio.to_thread(provider.authorize, location, username)
    parts = urlsplit(callback)
    assert parts.path == "/mcp/oauth/callback", callback
    done = await client.get(f"{parts.path}?{parts.query}")
    assert done.status_code == 302 and done["Location"].endswith("#connection-mine"), done.content
    return location


async def notes_turn(make_session, run_turn, model, user) -> Turn:
    session = await make_session(execution="agent", user=user)
    model.reply("", tool_calls=[(TOOL, {})])
    model.reply("Here.")
    return await run_turn(session, text="My notes?")


async def result_of(turn) -> dict:
    [result] = [e.payload async for e in turn.events.filter(type="tool.result")]
    return result


@pytest.fixture
async def agent_mode():
    await AgentMode.objects.filter(key="general").aupdate(tool_policy=["*"], approval_policy=["mine.*:auto"])


async def test_connect_discovers_authorizes_with_pkce_and_calls_as_that_user(
    oauth_server, start_host, provider, agent_mode, make_session, run_turn, model, alice, bob, llm
):
    client = await signed_in(alice)
    location = await connect(client, provider, "alice")
    query = parse_qs(urlsplit(location).query)
    assert location.startswith(f"{provider.issuer}/authorize/")  # found from the 401 and the two metadata documents
    assert query["code_challenge_method"] == ["S256"] and len(query["code_challenge"][0]) == 43
    assert len(query["state"][0]) >= 43  # 256 random bits, URL-safe
    assert query["resource"] == [oauth_server.url] and query["client_id"] == ["aptix-mcp"]
    tokens = await sync_to_async(tokens_get)(user_id=alice.pk, server="mine")
    assert tokens["access_token"] and tokens["refresh_token"]
    event = await ConnectionEvent.objects.aget(action="connected")
    assert event.username == "alice" and event.account == "alice"

    await start_host()
    turn = await notes_turn(make_session, run_turn, model, alice)
    assert turn.status == "completed", turn.error
    result = await result_of(turn)
    assert result["ok"] and "Notes of alice" in result["result"] and "bob" not in result["result"]

    # bob has not connected: his call pauses the turn with a connect card
    turn = await notes_turn(make_session, run_turn, model, bob)
    assert turn.status == Turn.Status.AWAITING_APPROVAL
    [waiting] = turn.state["awaiting"]
    assert waiting["kind"] == "connect" and waiting["server"] == "mine"
    _, token = await sync_to_async(api_token_create)(user=bob, name="ci")
    answer = await ServerLikeAsyncClient().get("/api/v1/mcp/servers", headers={"Authorization": f"Bearer {token}"})
    [listed] = json.loads(answer.content)
    assert listed["name"] == "mine" and listed["auth"] == "oauth" and listed["connected"] is False
    assert listed["connectUrl"].endswith("/mcp/oauth/connect/mine/") and listed["state"] == "unknown"
    redirected = await ServerLikeAsyncClient().get(
        "/mcp/oauth/connect/mine/", headers={"Authorization": f"Bearer {token}"}
    )
    assert redirected.status_code == 302 and redirected["Location"].startswith(provider.issuer)


async def test_tokens_are_refreshed_before_expiry_and_a_revoked_one_asks_to_connect_again(
    oauth_server, start_host, provider, agent_mode, make_session, run_turn, model, alice, llm
):
    client = await signed_in(alice)
    await connect(client, provider, "alice")
    await start_host()
    first = await sync_to_async(tokens_get)(user_id=alice.pk, server="mine")
    expiring = {**first, "expires_at": time.time() + 5}  # within the refresh margin
    await sync_to_async(tokens_save)(user=alice, server="mine", tokens=expiring)
    turn = await notes_turn(make_session, run_turn, model, alice)
    assert (await result_of(turn))["ok"], turn.error
    refreshed = await sync_to_async(tokens_get)(user_id=alice.pk, server="mine")
    assert refreshed["access_token"] != first["access_token"]

    for kind in ("access_token", "refresh_token"):  # the provider forgets both
        response = requests.post(
            f"{provider.issuer}/revoke_token/",
            data={"token": refreshed[kind], "client_id": "aptix-mcp"},
            timeout=10,
        )
        assert response.status_code == 200, response.text
    turn = await notes_turn(make_session, run_turn, model, alice)
    result = await result_of(turn)
    assert not result["ok"] and "connect it again" in result["error"]
    assert await sync_to_async(tokens_get)(user_id=alice.pk, server="mine") is None
    assert await ConnectionEvent.objects.filter(action="refresh_failed", username="alice").aexists()
    session = await make_session(execution="agent", user=alice)
    model.reply("", tool_calls=[(TOOL, {})])
    turn = await run_turn(session, text="Again?")
    assert turn.status == Turn.Status.AWAITING_APPROVAL and turn.state["awaiting"][0]["kind"] == "connect"


async def test_the_state_is_bound_to_its_user_and_disconnect_deletes_the_tokens(oauth_server, provider, alice, bob):
    alices = await signed_in(alice)
    answer = await alices.get("/mcp/oauth/connect/mine/")
    callback = await asyncio.to_thread(provider.authorize, answer["Location"], "alice")
    parts = urlsplit(callback)
    bobs = await signed_in(bob)
    refused = await bobs.get(f"{parts.path}?{parts.query}")  # alice's code and state in bob's browser
    assert refused.status_code == 400
    assert await sync_to_async(tokens_get)(user_id=bob.pk, server="mine") is None
    await connect(alices, provider, "alice")
    page = (await alices.get("/settings/")).content.decode()
    assert "connected as alice" in page and "Disconnect" in page
    await alices.post("/settings/connections/mine/remove/")
    assert await sync_to_async(tokens_get)(user_id=alice.pk, server="mine") is None
    assert await ConnectionEvent.objects.filter(action="disconnected", username="alice").aexists()


async def test_the_callback_finds_the_flow_without_the_starting_process_cache(oauth_server, provider, alice):
    """Another web process has its own local-memory cache: the state and verifier must not live there."""
    client = await signed_in(alice)
    answer = await client.get("/mcp/oauth/connect/mine/")
    callback = await asyncio.to_thread(provider.authorize, answer["Location"], "alice")
    await sync_to_async(cache.clear)()
    parts = urlsplit(callback)
    done = await client.get(f"{parts.path}?{parts.query}")
    assert done.status_code == 302 and done["Location"].endswith("#connection-mine"), done.content
    assert await sync_to_async(tokens_get)(user_id=alice.pk, server="mine") is not None
