"""The MCP authorization flow across real processes: two Aptix web processes (`manage.py aptix_serve`,
each with its own local-memory cache, on the one test database), the test authorization server
(tests/oidc_provider/) taking client ID metadata documents, and an OAuth-protected MCP server
(user_server.py). With no pre-registered client id, Aptix's client id is the URL of its own client ID
metadata document, which the authorization server fetches from Aptix; a flow started on one process
completes on the other (the pending state and PKCE verifier are in the database, not in a
process's cache); and the state is used once."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import httpx2
import pytest
from asgiref.sync import sync_to_async
from cryptography.fernet import Fernet
from django.conf import settings as django_settings

from connections.models import PendingAuthorization
from connections.store import tokens_get
from tests.browser.live import LiveServer
from tests.helpers import async_db
from tests.helpers.mcp import HttpServer, write_config
from tests.helpers.streams import session_cookie

pytestmark = [pytest.mark.slow, async_db]

USER_SERVER = Path(__file__).resolve().parent / "user_server.py"


@pytest.fixture
def provider(oidc_provider):
    oidc_provider.user("alice")
    oidc_provider.metadata_documents(on=True)
    yield oidc_provider
    oidc_provider.metadata_documents(on=False)


@pytest.fixture
def oauth_server(provider):
    server = HttpServer()
    server.listener.listen()
    fd = server.listener.fileno()
    server.process = subprocess.Popen(
        [sys.executable, str(USER_SERVER), str(fd), server.url, f"--issuer={provider.issuer}"], pass_fds=[fd]
    )
    yield server
    server.close()


@pytest.fixture
async def webs(tmp_path, oauth_server):
    config = write_config(tmp_path / "mcp.json", {"mine": {"url": oauth_server.url, "auth": {"type": "oauth"}}})
    env = {
        "DEBUG": "true",  # http:// and loopback URLs (the test processes), as in development
        "APTIX_SECRETS_KEY": Fernet.generate_key().decode(),
        "APTIX_MCP_CONFIG": str(config),
        "SECRET_KEY": django_settings.SECRET_KEY,  # the test's session cookie must hold there
    }
    servers = [LiveServer(var_dir=tmp_path / f"web{i}", env=env) for i in (1, 2)]
    try:
        for server in servers:
            await asyncio.to_thread(server.start)
        yield servers
    finally:
        for server in servers:
            await asyncio.to_thread(server.stop)


async def test_a_flow_started_on_one_process_completes_on_another_with_a_metadata_document_client(
    webs, provider, oauth_server, alice, settings
):
    settings.APTIX_SECRETS_KEY = [webs[0].env["APTIX_SECRETS_KEY"]]  # to read what the processes stored
    first, second = webs
    cookie = (await session_cookie(alice)).decode()
    async with httpx2.AsyncClient(timeout=30, headers={"Cookie": cookie}) as browser:
        started = await browser.get(f"{first.url}/mcp/oauth/connect/mine/")
        assert started.status_code == 302, (started.text, first.log_text()[-3000:])
        location = started.headers["Location"]
        assert location.startswith(provider.issuer), (location, first.log_text()[-3000:])
        query = parse_qs(urlsplit(location).query)
        document_url = f"{first.url}/mcp/oauth/client-metadata.json"
        assert query["client_id"] == [document_url]  # no pre-registered id: the metadata document's URL
        document = (await browser.get(document_url)).json()
        assert document["client_id"] == document_url
        assert document["redirect_uris"] == [f"{first.url}/mcp/oauth/callback"]
        assert document["token_endpoint_auth_method"] == "none"
        # The stored row holds neither the state nor the verifier in clear.
        row = await PendingAuthorization.objects.aget()
        assert query["state"][0] not in row.sealed + row.state_hash and "verifier" not in row.sealed

        callback = await asyncio.to_thread(provider.authorize, location, "alice")
        assert document_url in provider.metadata_documents(on=True)  # the provider fetched it from Aptix
        parts = urlsplit(callback)
        done = await browser.get(f"{second.url}{parts.path}?{parts.query}")  # the other process
        assert done.status_code == 302 and done.headers["Location"].endswith("#connection-mine"), (
            done.text,
            second.log_text()[-3000:],
        )
        tokens = await sync_to_async(tokens_get)(user_id=alice.pk, server="mine")
        assert tokens is not None and tokens["client_id"] == document_url
        again = await browser.get(f"{first.url}{parts.path}?{parts.query}")  # the state is used up
        assert again.status_code == 400
    assert not await PendingAuthorization.objects.aexists()
