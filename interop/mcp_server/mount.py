"""The ASGI application in front of Django: `/mcp` and `/mcp/` go to the MCP server, its OAuth
protected resource metadata (oauth.py) is answered here, everything else goes to Django as before
(aptix/asgi.py wraps its HTTP router in McpMount).

Before the SDK sees a request, the bearer token is checked as the JSON API checks it (aptix/bearer.py,
with its rate limits): without a valid token of an active user the answer is 401 with
`WWW-Authenticate: Bearer`; a Host outside ALLOWED_HOSTS is refused as Django would. The token's user
and a Django request over the same scope then travel in the scope to the handlers (server.py).

The session managers run stateless: every POST is a whole exchange (its own transport, no
`Mcp-Session-Id` to remember), so any Daphne process behind the load balancer can answer any request,
and nothing lives in one process's memory between requests. What that costs: the server cannot send
requests back to the client in the middle of a call. The 2026-07-28 protocol needs none (a call
answers "input required" with its elicitation forms and the client calls again: approvals.py); a
handshake-era client that declares elicitation is given a session instead (sessions.py), in which a
waiting turn asks it mid-call; any other handshake-era client gets a link to the session.

Two stateless managers over the same server, chosen per POST from its body (the spec lets the server
answer a request as JSON or as an SSE stream): with JSON responses for everything (the SDK's JSON
mode drops notifications, and has no disconnect watch), and with SSE for a `tools/call` whose client
accepts SSE and either asked for progress (`_meta.progressToken`) or speaks 2026-07-28 (whose
streaming entry answers JSON anyway unless the handler sends something or runs past its keep-alive
interval, and cancels the handler when the client closes the stream: its way to cancel a call). A
`notifications/cancelled` is taken here, before the SDK: calls.py cancels the turn of the sender's
call it names (202); in a session it then goes on to the SDK too, which stops the call's handler.

The SDK's manager needs its task group running (`run()`), which a Starlette app enters in its ASGI
lifespan; Daphne has none (aptix/startup.py), so it is entered on the first MCP request, once per
event loop, in a task that holds it for the loop's life.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import io
import json
import weakref
from typing import Any

from django.core.exceptions import DisallowedHost
from django.core.handlers.asgi import ASGIRequest
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.shared.inbound import MCP_PROTOCOL_VERSION_HEADER
from mcp.shared.jsonrpc_dispatcher import cancelled_request_id_from_params, progress_token_from_params
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from starlette.responses import JSONResponse, Response

from agents.web.api_support import ApiError, authenticate
from aptix.models import ApiToken

from ..requests import connection_given_back, served_as_a_request
from . import calls, oauth, sessions
from .server import SCOPE_CALLER, SCOPE_REQUEST, SCOPE_USER, build_server

PATHS = frozenset({"/mcp", "/mcp/"})
ERROR_HOST = "Bad Host header: not one of this site's hosts (ALLOWED_HOSTS)."
ERROR_METHOD = "Use GET."
ERROR_SESSION = "Session not found: initialize again."

Scope = dict[str, Any]


class _Running:
    """One event loop's session managers, entered by a task that keeps them open: the stateless ones
    every request goes to (JSON, and SSE for a call that streams), and the one holding the sessions of
    handshake-era clients that can be asked mid-call (sessions.py)."""

    def __init__(self) -> None:
        self.manager = StreamableHTTPSessionManager(build_server(), stateless=True, json_response=True)
        self.streaming = StreamableHTTPSessionManager(build_server(), stateless=True, json_response=False)
        self.stateful = StreamableHTTPSessionManager(build_server())
        self.owners = sessions.Owners()
        self.ready = asyncio.Event()
        # A context of its own: the handlers run in the manager's tasks, which must not inherit the
        # first request's thread context (server.py gives each call one of its own).
        self.task = asyncio.get_running_loop().create_task(
            self._hold(), name="aptix-mcp-server", context=contextvars.Context()
        )

    async def _hold(self) -> None:
        async with self.manager.run(), self.streaming.run(), self.stateful.run():
            self.ready.set()
            await asyncio.Event().wait()  # until the loop ends: the task is cancelled with it


_running: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Running] = weakref.WeakKeyDictionary()


async def _managers() -> _Running:
    loop = asyncio.get_running_loop()
    running = _running.get(loop)
    if running is None:
        running = _running[loop] = _Running()
    await running.ready.wait()
    return running


def _message(body: bytes) -> dict[str, Any]:
    """The POST's JSON-RPC object, or {} (not JSON, not one object, too large to look at: the SDK
    answers it)."""
    with contextlib.suppress(ValueError, RecursionError):
        decoded = json.loads(body)
        return decoded if isinstance(decoded, dict) else {}
    return {}


def _header(scope: Scope, name: str) -> str:
    wanted = name.lower().encode("latin-1")
    return next((v.decode("latin-1") for k, v in scope["headers"] if k == wanted), "")


def _streams(scope: Scope, message: dict[str, Any]) -> bool:
    """Whether the POST is a tool call to answer with the streaming manager (see the docstring)."""
    if (
        message.get("method") != "tools/call"
        or "id" not in message
        or "text/event-stream" not in _header(scope, "accept")
    ):
        return False
    params = message.get("params")
    modern = _header(scope, MCP_PROTOCOL_VERSION_HEADER) in MODERN_PROTOCOL_VERSIONS
    return modern or progress_token_from_params(params if isinstance(params, dict) else None) is not None


def _cancelled(message: dict[str, Any]) -> Any:
    """The request id a `notifications/cancelled` names, or None (not one)."""
    if message.get("method") != "notifications/cancelled" or "id" in message:
        return None
    params = message.get("params")
    return cancelled_request_id_from_params(params if isinstance(params, dict) else None)


def _refusal(exc: ApiError, origin: str) -> JSONResponse:
    headers = {"WWW-Authenticate": oauth.challenge(origin)} if exc.status == 401 else {}
    if exc.retry_after is not None:
        headers["Retry-After"] = str(exc.retry_after)
    return JSONResponse(
        {"error": {"message": exc.message, "field": exc.field}}, status_code=exc.status, headers=headers
    )


def _origin(request: ASGIRequest) -> str:
    """The origin the client reached (scheme://host), or ApiError(400) for a Host outside ALLOWED_HOSTS."""
    try:
        return f"{request.scheme}://{request.get_host()}"
    except DisallowedHost:
        raise ApiError(400, ERROR_HOST) from None


def _metadata(scope: Scope, origin: str) -> JSONResponse:
    """The protected resource metadata (oauth.py), to anyone: it names no user and no secret."""
    if scope["method"] not in ("GET", "HEAD"):
        raise ApiError(405, ERROR_METHOD)
    if not oauth.enabled():
        raise ApiError(404, oauth.ERROR_OFF)
    return JSONResponse(oauth.metadata(origin), headers={"Cache-Control": "max-age=3600"})


class McpMount:
    """`/mcp/` to the MCP server (after authentication), anything else to `app`."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["path"] not in PATHS | oauth.PATHS:
            await self.app(scope, receive, send)
            return
        # As Django's ASGIHandler serves a request: its sync work on a thread of its own, its database
        # connections closed (or kept, by CONN_MAX_AGE) when it ends.
        async with served_as_a_request():
            await self._serve(scope, receive, send)

    async def _serve(self, scope: Scope, receive: Any, send: Any) -> None:
        request, origin = ASGIRequest(scope, io.BytesIO()), ""
        try:
            origin = _origin(request)
            if scope["path"] in oauth.PATHS:
                await _metadata(scope, origin)(scope, receive, send)
                return
            # 401 without a valid token, 403 for one limited to other interfaces, 429 past the rate limits.
            user = await authenticate(request, ApiToken.Interface.MCP)
        except ApiError as exc:
            await _refusal(exc, origin)(scope, receive, send)
            return
        await connection_given_back()
        running = await _managers()
        caller = calls.caller_of(_header(scope, "authorization"))
        scope = {**scope, SCOPE_USER: user, SCOPE_REQUEST: request, SCOPE_CALLER: caller}
        body, message = b"", {}
        if scope["method"] == "POST":
            body, receive = await sessions.buffered(receive)
            message = _message(body)
        session = sessions.session_id(scope)
        if (request_id := _cancelled(message)) is not None:
            # The turn of the user's call with that id and this credential, wherever it runs.
            await calls.cancel(user=user, caller=caller, request_id=request_id)
            if session is None:
                await Response(status_code=202)(scope, receive, send)
                return
        manager = running.manager
        if session is not None:  # a session this process gave: its owner's only
            if not running.owners.owns(session, user.pk):
                await JSONResponse({"error": {"message": ERROR_SESSION}}, status_code=404)(scope, receive, send)
                return
            manager = running.stateful
        elif sessions.wants_session(body):
            manager, send = running.stateful, running.owners.remembering(send, user.pk)
        elif _streams(scope, message):
            manager = running.streaming
        await manager.handle_request(scope, receive, send)
