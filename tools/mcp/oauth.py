"""The MCP authorization flow for an entry with `"auth": {"type": "oauth"}`, per user: discovery, client
registration, authorization code with PKCE, tokens refreshed before they expire.

1. Discovery: an unauthenticated request to the server answers 401 with `WWW-Authenticate`, whose
   `resource_metadata` names its protected resource metadata (RFC 9728; else the well-known URLs);
   that names the authorization server, whose metadata is read (RFC 8414, then OpenID Connect
   discovery). The URL lists come from the MCP SDK (mcp.client.auth.utils); every fetch goes through
   ssrf.py (https only, no private addresses unless the entry allows them, redirects re-checked,
   answers bounded).
2. The client: the entry's `clientId` (and `clientSecret`); else, when the authorization server's
   metadata says `client_id_metadata_document_supported`, the URL of Aptix's client ID metadata
   document (`client_metadata`, served at /mcp/oauth/client-metadata.json); else dynamic registration
   (RFC 7591) at the server's `registration_endpoint`, kept in the database per server and issuer.
3. `authorization_start` makes a `state` (256 random bits) bound to the user and the server, and a
   PKCE verifier (S256), kept in the database for 10 minutes (connections/authorizations.py: the
   callback may land on any web process); the URL carries `resource` (RFC 8707) =
   the server's resource. `authorization_complete` (the callback) checks the state is this user's,
   exchanges the code and stores the tokens sealed (connections/).
4. `access_token` gives a user's access token, refreshed first when it expires within a minute; a
   refused refresh deletes the tokens (audited), so the user is asked to connect again.
"""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
import time
from dataclasses import asdict, dataclass
from typing import Any
from urllib.parse import urlencode

import httpx2
from django.core.cache import cache
from mcp.client.auth.utils import (
    build_oauth_authorization_server_metadata_discovery_urls,
    build_protected_resource_metadata_discovery_urls,
    extract_resource_metadata_from_www_auth,
)
from mcp.shared.auth import OAuthMetadata, OAuthToken, ProtectedResourceMetadata
from pydantic import ValidationError

from .config import ServerConfig
from .ssrf import UnsafeUrl, fetch

STATE_SECONDS = 600
DISCOVERY_SECONDS = 3600
REFRESH_MARGIN = 60  # seconds before expiry a token is refreshed
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "aptix", "version": "0"}},
}


class OAuthError(Exception):
    """The flow cannot go on; the message says why (for the user or the admin)."""


@dataclass(frozen=True)
class Discovery:
    resource: str
    issuer: str
    authorization_endpoint: str
    token_endpoint: str
    registration_endpoint: str | None
    scopes: tuple[str, ...]
    metadata_document: bool = False  # client_id_metadata_document_supported: a URL may be the client id


def discover(config: ServerConfig) -> Discovery:
    key = f"mcp-oauth-discovery:{config.name}:{hashlib.sha256(config.url.encode()).hexdigest()[:16]}"
    if cached := cache.get(key):
        return Discovery(**{**cached, "scopes": tuple(cached["scopes"])})
    allow = config.allow_private_network
    try:
        probe, _ = fetch(
            "POST",
            config.url,
            allow_private=allow,
            json=INITIALIZE,
            headers={"Accept": "application/json, text/event-stream"},
        )
        metadata_url = extract_resource_metadata_from_www_auth(probe) if probe.status_code in (401, 403) else None
        resource = _first(build_protected_resource_metadata_discovery_urls(metadata_url, config.url), allow)
        prm = ProtectedResourceMetadata.model_validate_json(resource)
        issuer = str(prm.authorization_servers[0])
        urls = build_oauth_authorization_server_metadata_discovery_urls(issuer, config.url)
        metadata = OAuthMetadata.model_validate_json(_first(urls, allow))
    except (UnsafeUrl, httpx2.HTTPError, ValidationError) as exc:
        raise OAuthError(f'MCP server "{config.name}": its authorization could not be discovered ({exc})') from None
    found = Discovery(
        resource=str(prm.resource),
        issuer=str(metadata.issuer),
        authorization_endpoint=str(metadata.authorization_endpoint),
        token_endpoint=str(metadata.token_endpoint),
        registration_endpoint=str(metadata.registration_endpoint) if metadata.registration_endpoint else None,
        scopes=tuple(config.auth.scopes if config.auth and config.auth.scopes else prm.scopes_supported or ()),
        metadata_document=metadata.client_id_metadata_document_supported is True,
    )
    cache.set(key, asdict(found), DISCOVERY_SECONDS)
    return found


def _first(urls: list[str], allow: bool) -> bytes:
    """The body of the first of `urls` that answers 200."""
    for url in urls:
        response, body = fetch("GET", url, allow_private=allow)
        if response.status_code == 200:
            return body
    raise OAuthError(f"none of {', '.join(urls)} answered")


def client_for(
    config: ServerConfig, found: Discovery, redirect_uri: str, metadata_url: str = ""
) -> tuple[str, str | None]:
    """(client id, client secret), in the specification's order of preference: the entry's
    pre-registered id; else, when the authorization server takes client ID metadata documents, the
    URL of Aptix's (`metadata_url`: a public client, no secret); else one registered dynamically
    (kept in the database: every process uses the one client)."""
    from connections.authorizations import client_key, registered_client, registered_client_save

    if config.auth and config.auth.client_id:
        return config.auth.client_id, config.auth.client_secret
    if found.metadata_document and metadata_url:
        return metadata_url, None
    key = client_key(config.name, found.issuer, redirect_uri)
    if (known := registered_client(key=key)) is not None:
        return known
    if not found.registration_endpoint:
        raise OAuthError(
            f'MCP server "{config.name}": its authorization server offers no dynamic registration; set "clientId" '
            'in its "auth"'
        )
    body = {
        "client_name": "Aptix",
        "redirect_uris": [redirect_uri],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": "none",
    }
    response, answer = fetch("POST", found.registration_endpoint, allow_private=config.allow_private_network, json=body)
    if response.status_code not in (200, 201):
        raise OAuthError(f'MCP server "{config.name}": dynamic registration refused (HTTP {response.status_code})')
    registered = json.loads(answer)
    return registered_client_save(
        key=key, server=config.name, client_id=registered["client_id"], client_secret=registered.get("client_secret")
    )


def authorization_start(config: ServerConfig, *, user_id: int, redirect_uri: str, metadata_url: str = "") -> str:
    """The authorization server's URL to send the user to (`metadata_url`: where Aptix serves its
    client ID metadata document, used as the client id where the server takes one)."""
    found = discover(config)
    client_id, _ = client_for(config, found, redirect_uri, metadata_url)
    verifier = secrets.token_urlsafe(64)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
    from connections.authorizations import authorization_save

    state = secrets.token_urlsafe(32)  # 256 bits
    pending = {"verifier": verifier, "redirect_uri": redirect_uri, "client_id": client_id}
    authorization_save(state=state, user_id=user_id, server=config.name, values=pending, seconds=STATE_SECONDS)
    params = {
        "response_type": "code",
        "client_id": client_id,
        "redirect_uri": redirect_uri,
        "state": state,
        "code_challenge": challenge,
        "code_challenge_method": "S256",
        "resource": found.resource,
    }
    if found.scopes:
        params["scope"] = " ".join(found.scopes)
    return f"{found.authorization_endpoint}?{urlencode(params)}"


def client_metadata(*, metadata_url: str, redirect_uri: str, home: str) -> dict[str, Any]:
    """Aptix's client ID metadata document: its `client_id` is the URL it is served at."""
    return {
        "client_id": metadata_url,
        "client_name": "Aptix",
        "client_uri": home,
        "redirect_uris": [redirect_uri],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": "none",
    }


def pending_server(state: str) -> str | None:
    """The server a callback's `state` was made for (None: unknown, used or expired)."""
    from connections.authorizations import authorization_server

    return authorization_server(state=state)


def authorization_complete(config: ServerConfig, *, user: Any, state: str, code: str) -> None:
    """Exchange the code for tokens and store them for `user`. OAuthError when the state is not
    this user's for this server (or has expired, or was used) or the server refuses the code."""
    from connections.authorizations import authorization_take

    pending = authorization_take(state=state, user_id=user.pk, server=config.name)  # one use, its owner's
    if pending is None:
        raise OAuthError("This connection attempt is unknown, expired or not yours: connect again.")
    found = discover(config)
    client_id = pending["client_id"]  # the client the flow started with, whichever process that was
    client_secret = _secret_of(config, found, pending["redirect_uri"], client_id)
    form = {
        "grant_type": "authorization_code",
        "code": code,
        "redirect_uri": pending["redirect_uri"],
        "code_verifier": pending["verifier"],
        "client_id": client_id,
        "resource": found.resource,
    }
    _store(config, user, _token_request(config, found, form, client_secret), client_id)


def _secret_of(config: ServerConfig, found: Discovery, redirect_uri: str, client_id: str) -> str | None:
    """The secret of client `client_id`: the entry's, or a registered client's; None for a public
    client (a client ID metadata document's URL, a registration without one)."""
    from connections.authorizations import client_key, registered_client

    if config.auth and config.auth.client_id == client_id:
        return config.auth.client_secret
    known = registered_client(key=client_key(config.name, found.issuer, redirect_uri))
    return known[1] if known and known[0] == client_id else None


def _token_request(config: ServerConfig, found: Discovery, form: dict, client_secret: str | None) -> dict:
    auth = (form["client_id"], client_secret) if client_secret else None
    try:
        response, body = fetch(
            "POST", found.token_endpoint, allow_private=config.allow_private_network, data=form, auth=auth
        )
    except (UnsafeUrl, httpx2.HTTPError) as exc:
        raise OAuthError(f'MCP server "{config.name}": its token endpoint failed ({exc})') from None
    if response.status_code != 200:
        raise OAuthError(f'MCP server "{config.name}": its authorization server refused (HTTP {response.status_code})')
    try:
        token = OAuthToken.model_validate_json(body)
    except ValidationError:
        raise OAuthError(f'MCP server "{config.name}": its token answer is not valid') from None
    raw = json.loads(body)
    return {**token.model_dump(exclude_none=True), "id_token": raw.get("id_token")}


def _store(config: ServerConfig, user: Any, token: dict, client_id: str, previous: dict | None = None) -> None:
    from datetime import UTC, datetime

    from connections.store import tokens_save

    expires = time.time() + token["expires_in"] if token.get("expires_in") else None
    tokens = {
        "access_token": token["access_token"],
        "refresh_token": token.get("refresh_token") or (previous or {}).get("refresh_token"),
        "expires_at": expires,
        "client_id": client_id,
    }
    account = _account(str(token.get("id_token") or ""))
    at = datetime.fromtimestamp(expires, UTC) if expires else None
    tokens_save(user=user, server=config.name, tokens=tokens, account=account, expires_at=at)


def _account(id_token: str) -> str:
    """Who the provider says the user is, for "connected as …" only (not trusted for anything else)."""
    if not id_token:
        return ""
    try:
        payload = id_token.split(".")[1]
        claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    except (IndexError, ValueError):
        return ""
    return str(claims.get("preferred_username") or claims.get("email") or claims.get("sub") or "")


def access_token(config: ServerConfig, user: Any, *, force_refresh: bool = False) -> str | None:
    """The user's access token for the server, refreshed first when it expires within a minute (or
    `force_refresh`: the server refused it); None when they must connect (again)."""
    from connections.store import refresh_failed, tokens_get

    tokens = tokens_get(user_id=user.pk, server=config.name)
    if tokens is None:
        return None
    expires = tokens.get("expires_at")
    if not force_refresh and (expires is None or expires - time.time() > REFRESH_MARGIN):
        return str(tokens["access_token"])
    if not tokens.get("refresh_token"):
        refresh_failed(user=user, server=config.name)
        return None
    try:
        found = discover(config)
        client_secret = config.auth.client_secret if config.auth else None  # a registered client has none
        form = {
            "grant_type": "refresh_token",
            "refresh_token": tokens["refresh_token"],
            "client_id": tokens["client_id"],
            "resource": found.resource,
        }
        _store(config, user, _token_request(config, found, form, client_secret), tokens["client_id"], tokens)
    except OAuthError:
        refresh_failed(user=user, server=config.name)
        return None
    refreshed = tokens_get(user_id=user.pk, server=config.name)
    return str(refreshed["access_token"]) if refreshed else None
