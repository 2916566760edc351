"""The ASGI application in front of Django: the agent card and the JSON-RPC endpoint, everything else
to Django as before (aptix/asgi.py wraps its HTTP router in A2aMount, around McpMount).

- `GET /.well-known/agent-card.json`: the public card (card.py), for anyone: it names the service only.
- `/a2a/` (and `/a2a`): the bearer token is checked first, as the JSON API checks it (aptix/bearer.py,
  with its rate limits): without a valid token of an active user the answer is 401 with
  `WWW-Authenticate: Bearer`; a Host outside ALLOWED_HOSTS is refused as Django would. Then the SDK's
  JSON-RPC dispatcher (A2A 1.0's methods, and 0.3's `message/send`… on the same URL) calls handler.py
  with the token's user in its call context.

Nothing is kept in a process between requests: a task is a turn in the database, so any web process
answers any request about it.
"""

from __future__ import annotations

import io
from typing import Any

from a2a.server.routes import create_jsonrpc_routes
from a2a.utils.constants import AGENT_CARD_WELL_KNOWN_PATH
from django.core.exceptions import DisallowedHost
from django.core.handlers.asgi import ASGIRequest
from starlette.applications import Starlette
from starlette.responses import JSONResponse

from agents.web.api_support import ApiError, authenticate
from aptix.models import ApiToken

from ..requests import connection_given_back, served_as_a_request
from . import card, services
from .handler import SCOPE_REQUEST, SCOPE_USER, AptixRequestHandler, ContextBuilder

RPC_PATHS = frozenset({"/a2a", card.RPC_PATH})
ERROR_HOST = "Bad Host header: not one of this site's hosts (ALLOWED_HOSTS)."
ERROR_METHOD = "Use GET."

Scope = dict[str, Any]


def _refusal(exc: ApiError) -> JSONResponse:
    headers = {"WWW-Authenticate": 'Bearer realm="aptix"'} if exc.status == 401 else {}
    if exc.retry_after is not None:
        headers["Retry-After"] = str(exc.retry_after)
    return JSONResponse(
        {"error": {"message": exc.message, "field": exc.field}}, status_code=exc.status, headers=headers
    )


def _request(scope: Scope) -> ASGIRequest:
    """The Django request over the scope, or ApiError(400) for a Host outside ALLOWED_HOSTS."""
    request = ASGIRequest(scope, io.BytesIO())
    try:
        request.get_host()
    except DisallowedHost:
        raise ApiError(400, ERROR_HOST) from None
    return request


def _rpc_app() -> Starlette:
    return Starlette(
        routes=create_jsonrpc_routes(
            AptixRequestHandler(), card.RPC_PATH, context_builder=ContextBuilder(), enable_v0_3_compat=True
        )
    )


class A2aMount:
    """The agent card and `/a2a/` (after authentication) to the A2A agent, anything else to `app`."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.rpc = _rpc_app()

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or (scope["path"] not in RPC_PATHS and scope["path"] != AGENT_CARD_WELL_KNOWN_PATH):
            await self.app(scope, receive, send)
            return
        # As Django's ASGIHandler serves a request: its sync work on a thread of its own, its database
        # connections closed (or kept, by CONN_MAX_AGE) when it ends.
        async with served_as_a_request():
            await self._serve(scope, receive, send)

    async def _serve(self, scope: Scope, receive: Any, send: Any) -> None:
        try:
            request = _request(scope)
            if scope["path"] == AGENT_CARD_WELL_KNOWN_PATH:
                if scope["method"] not in ("GET", "HEAD"):
                    raise ApiError(405, ERROR_METHOD)
                public = card.card_json(card.public_card(services.request_origin(request)))
                await JSONResponse(public)(scope, receive, send)
                return
            user = await authenticate(request, ApiToken.Interface.A2A)
        except ApiError as exc:
            await _refusal(exc)(scope, receive, send)
            return
        await connection_given_back()
        rpc_scope = {**scope, "path": card.RPC_PATH, SCOPE_USER: user, SCOPE_REQUEST: request}
        await self.rpc(rpc_scope, receive, send)
