"""Connecting an OAuth MCP server in Chromium, against real processes: the MCP SDK's resource server
(tests/tools/mcp/user_server.py) and the test authorization server (tests/oidc_provider/). Settings →
Connections offers Connect; one click goes through discovery to the provider's login form; back in
Aptix the form says "connected as alice" with Disconnect, and Disconnect deletes the tokens."""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from asgiref.sync import sync_to_async
from cryptography.fernet import Fernet

from connections.models import Credential
from tests.helpers import async_db
from tests.helpers.mcp import HttpServer
from tests.helpers.oidc import PASSWORD

from .live import expect

pytestmark = [pytest.mark.asyncio(loop_scope="session"), async_db]

USER_SERVER = Path(__file__).resolve().parents[1] / "tools" / "mcp" / "user_server.py"


@pytest.fixture(scope="module")
def oauth_server(oidc_provider):
    server = HttpServer()
    server.listener.listen()
    fd = server.listener.fileno()
    server.process = subprocess.Popen(
        [sys.executable, str(USER_SERVER), str(fd), server.url, f"--issuer={oidc_provider.issuer}"], pass_fds=[fd]
    )
    yield server
    server.close()


@pytest.fixture(scope="module")
def daphne_env(oidc_provider, oauth_server, tmp_path_factory) -> dict[str, str]:
    config = tmp_path_factory.mktemp("mcp") / "mcp.json"
    auth = {"type": "oauth", "clientId": "aptix-mcp", "scopes": ["openid", "profile"]}
    config.write_text(json.dumps({"mcpServers": {"mine": {"url": oauth_server.url, "auth": auth}}}))
    return {
        "APTIX_MCP_CONFIG": str(config),
        "APTIX_SECRETS_KEY": Fernet.generate_key().decode(),
        "DEBUG": "true",  # the server and the provider are http:// on loopback
    }


async def test_connect_in_the_browser_then_disconnect(sign_in, oidc_provider, alice):
    await asyncio.to_thread(oidc_provider.user, "alice")
    page = await sign_in(alice)
    await page.goto("/settings/")
    form = page.locator("#connection-mine")
    await expect(form).to_contain_text("not connected")
    await form.get_by_role("link", name="Connect").click()
    await expect(page.get_by_role("heading", name="Test provider")).to_be_visible()  # the provider's login
    await page.fill("#id_username", "alice")
    await page.fill("#id_password", PASSWORD)
    await page.click("text=Sign in at the provider")
    await expect(page).to_have_url(re.compile(r"/settings/#connection-mine$"))
    await expect(page.locator("#connection-mine")).to_contain_text("connected as alice")
    assert await sync_to_async(Credential.objects.filter(user=alice, server="mine", kind="oauth").exists)()
    await page.locator("#connection-mine").get_by_role("button", name="Disconnect").click()
    await expect(page.locator("#connection-mine")).to_contain_text("not connected")
    assert not await sync_to_async(Credential.objects.filter(user=alice, server="mine").exists)()
