"""OAuth for the MCP server: with the identity provider's access tokens taken for programs, `/mcp/` is a
protected resource whose metadata names the provider; the official MCP client's own OAuth flow (the
401's resource_metadata, the provider's discovery, its login with PKCE) against the real test provider
ends with the signed-in user's tools and turns. Without those settings there is no metadata."""

from __future__ import annotations

import asyncio
from urllib.parse import parse_qs, urlsplit

import httpx2
import pytest
from asgiref.sync import sync_to_async
from django.contrib.auth import get_user_model
from django.test import Client as DjangoClient
from mcp import Client
from mcp.client.auth import OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import AuthorizationCodeResult, OAuthClientInformationFull, OAuthClientMetadata, OAuthToken

from agents.models import AgentSession
from aptix.models import Membership
from tests.helpers import async_db
from tests.helpers.interop import ACCEPT, BASE, INITIALIZE, asgi_http
from tests.helpers.oidc import API_AUDIENCE, sign_in

pytestmark = async_db

METADATA = "/.well-known/oauth-protected-resource/mcp/"
MCP_CLIENT_ID = "aptix-mcp"  # the provider's public client for MCP (tests/oidc_provider/__main__.py)
REDIRECT = "http://127.0.0.1/mcp/oauth/callback"


class Storage:
    """The MCP client's token storage, with the client registered at the provider beforehand (the
    test provider has no dynamic registration), as an editor's MCP settings would hold it."""

    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client = OAuthClientInformationFull(
            client_id=MCP_CLIENT_ID, redirect_uris=[REDIRECT], token_endpoint_auth_method="none"
        )

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client = client_info


async def test_without_the_providers_api_audience_there_is_no_metadata(settings):
    settings.APTIX_OIDC_ISSUER = "http://127.0.0.1:1/o"
    settings.APTIX_OIDC_API_AUDIENCE = None
    async with asgi_http() as http:
        metadata = await http.get(METADATA)
        refused = await http.post("/mcp/", json=INITIALIZE, headers=ACCEPT)
    assert metadata.status_code == 404 and "API token" in metadata.json()["error"]["message"]
    assert refused.status_code == 401 and refused.headers["WWW-Authenticate"] == 'Bearer realm="aptix"'


async def test_the_metadata_names_the_provider_and_the_401_points_at_it(settings):
    settings.APTIX_OIDC_ISSUER = "http://127.0.0.1:1/o"
    settings.APTIX_OIDC_API_AUDIENCE = API_AUDIENCE
    settings.OIDC_RP_SCOPES = "openid email profile"
    async with asgi_http() as http:
        refused = await http.post("/mcp/", json=INITIALIZE, headers=ACCEPT)
        documents = [(await http.get(path)) for path in (METADATA, METADATA.rstrip("/"))]
        posted = await http.post(METADATA)
    assert refused.status_code == 401
    assert refused.headers["WWW-Authenticate"] == f'Bearer realm="aptix", resource_metadata="{BASE}{METADATA}"'
    for document in documents:
        assert document.status_code == 200
        assert document.json() == {
            "resource": f"{BASE}/mcp/",
            "authorization_servers": ["http://127.0.0.1:1/o"],
            "scopes_supported": ["openid", "email", "profile"],
            "bearer_methods_supported": ["header"],
            "resource_name": "Aptix",
        }
    assert posted.status_code == 405


@pytest.mark.slow
async def test_the_mcp_clients_oauth_flow_with_the_provider_gets_the_users_tools_and_turns(
    llm, model, signing_in, settings, team_a
):
    settings.APTIX_OIDC_API_AUDIENCE = API_AUDIENCE
    settings.API_BEARER_FALLBACK = "identity.access_tokens.access_token_user"
    signing_in.user("wes")

    def first_sign_in():  # an account exists once its user has signed in to Aptix in a browser
        sign_in(DjangoClient(), signing_in, "wes")
        wes = get_user_model().objects.get(username="wes")
        Membership.objects.get_or_create(team=team_a, user=wes)
        return wes

    wes = await sync_to_async(first_sign_in)()
    redirected: list[str] = []

    async def redirect_handler(authorization_url: str) -> None:
        # The user's browser at the provider: its login form, then back to the client's redirect URI.
        redirected.append(await asyncio.to_thread(signing_in.authorize, authorization_url, "wes"))

    async def callback_handler() -> AuthorizationCodeResult:
        query = parse_qs(urlsplit(redirected[-1]).query)
        return AuthorizationCodeResult(code=query["code"][0], state=query["state"][0])

    auth = OAuthClientProvider(
        server_url=f"{BASE}/mcp/",
        client_metadata=OAuthClientMetadata(redirect_uris=[REDIRECT], client_name="pytest"),
        storage=Storage(),
        redirect_handler=redirect_handler,
        callback_handler=callback_handler,
    )
    from aptix.asgi import router

    # Aptix in process; the provider over real HTTP.
    mounts = {BASE: httpx2.ASGITransport(app=router)}
    model.reply("Hello Wes.")
    async with (
        httpx2.AsyncClient(auth=auth, mounts=mounts, timeout=60) as http,
        Client(streamable_http_client(f"{BASE}/mcp/", http_client=http)) as client,
    ):
        tools = {tool.name for tool in (await client.list_tools()).tools}
        result = await client.call_tool("ask_general", {"message": "Hi", "execution": "ask"})
    assert len(redirected) == 1  # one login, then the token is used for every request
    assert {"ask_general", "ask_data-analysis"} <= tools
    assert result.content[0].text == "Hello Wes."
    session = await AgentSession.objects.aget(pk=result.structured_content["conversationId"])
    assert session.user_id == wes.id
