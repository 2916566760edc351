"""The official MCP client against Aptix's MCP server (/mcp/), and the official A2A client against its
A2A agent (/a2a/), in process over the real ASGI router (httpx's ASGI transport: no socket) or over
HTTP to a live server."""

from __future__ import annotations

from contextlib import asynccontextmanager
from typing import Any

import httpx
import httpx2
from a2a.client import ClientConfig, ClientFactory
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp_types import Implementation

BASE = "http://testserver"
# A handshake-era `initialize` as a plain HTTP client sends it, and the Accept header the transport asks for.
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "curl", "version": "1"}},
}
ACCEPT = {"Accept": "application/json, text/event-stream"}


def asgi_http(token: str | None = None) -> httpx2.AsyncClient:
    """An HTTP client that sends its requests to aptix.asgi's router (/mcp/ in front of Django)."""
    from aptix.asgi import router

    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return httpx2.AsyncClient(transport=httpx2.ASGITransport(app=router), base_url=BASE, headers=headers)


@asynccontextmanager
async def mcp_client(
    token: str,
    *,
    mode: str = "legacy",
    name: str = "pytest-client",
    server: str | None = None,
    elicitation_callback: Any = None,
):
    """The official MCP client, signed in with `token`: over the in-process application, or over HTTP
    to `server` (a live server's address, e.g. http://127.0.0.1:8123); with `elicitation_callback`, a
    client that answers the server's forms."""
    if server is None:
        http = asgi_http(token)
    else:
        http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=120)
    async with http:
        transport = streamable_http_client(f"{server or BASE}/mcp/", http_client=http)
        async with Client(
            transport,
            mode=mode,
            client_info=Implementation(name=name, version="1"),
            elicitation_callback=elicitation_callback,
        ) as client:
            yield client


def a2a_http(token: str | None = None, *, server: str | None = None) -> httpx.AsyncClient:
    """The HTTP client the A2A SDK's client takes (it speaks httpx): to aptix.asgi's router in process,
    or to `server` (a live server's address); with `token` as the bearer."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    if server is not None:
        return httpx.AsyncClient(base_url=server, headers=headers, timeout=120)
    from aptix.asgi import router

    return httpx.AsyncClient(transport=httpx.ASGITransport(app=router), base_url=BASE, headers=headers, timeout=120)


@asynccontextmanager
async def a2a_client(token: str, *, streaming: bool = False, server: str | None = None):
    """The official A2A client (a2a-sdk), from the agent card of Aptix in process or at `server`,
    signed in with `token`: JSON-RPC, A2A 1.0."""
    async with a2a_http(token, server=server) as http:
        factory = ClientFactory(ClientConfig(httpx_client=http, streaming=streaming))
        client = await factory.create_from_url(server or BASE)
        async with client:
            yield client
