"""What the host watches on a streamable-HTTP connection, below the SDK: the HTTP status of each
response, seen through httpx event hooks.

- An answer saying the server no longer knows our `Mcp-Session-Id` (it restarted, or expired the
  session): 404, as the specification says, or 400 with an error about the session, as servers
  built on the TypeScript SDK's examples answer (the reference `everything` server: "Bad Request: No
  valid session ID provided"; "Server not initialized"). The client MUST then start a new session,
  so the connection is given up and the supervisor reconnects; the SDK alone would keep sending the
  dead session id and fail every call. A ping is such a request too, so an idle session whose server
  restarted is noticed by the next ping (`ping_interval`), before any call fails.
- Any other error status: where the SDK reports only "Server returned an error response" (the body
  was not a JSON-RPC error it could match to the request), the server's own text replaces it, with
  the status: "HTTP 500 Internal Server Error: database is locked". `received` does that on the
  message stream (listing.filtered), by request id.
- 401/403: the status and the server's WWW-Authenticate challenge are kept, so the status says
  what to fix.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Callable
from http import HTTPStatus
from typing import Any

import httpx2
import mcp_types as types

HTTP_TIMEOUT = httpx2.Timeout(30.0, read=300.0)  # the SDK's defaults: a response stream may stay open
SESSION_HEADER = "mcp-session-id"
CHALLENGE_LIMIT = 300  # characters of a WWW-Authenticate header quoted in the status
ERROR_TEXT_LIMIT = 300  # characters of an error answer's text quoted in a message
ERROR_BODY_LIMIT = 64 * 1024  # bytes of an error answer read for its text (JSON ones are read anyway)
SDK_STAND_IN = "Server returned an error response"  # the SDK's message for an error status it cannot read
SESSION_GONE_RE = re.compile(r"session|not initiali[sz]ed", re.IGNORECASE)
PENDING_LIMIT = 100  # error texts kept for requests whose answer has not been delivered yet


class HttpWatch:
    """The event hooks of one connection's HTTP client and what they saw."""

    def __init__(self, server: str, url: str, on_session_gone: Callable[[str], None]) -> None:
        self.server = server
        self.url = url
        self.auth_failure: str | None = None
        self.session_id: str | None = None  # the MCP session the server gave us (its `Mcp-Session-Id`)
        self._on_session_gone = on_session_gone
        self._errors: dict[Any, str] = {}  # JSON-RPC request id -> "HTTP 400 Bad Request: <the server's text>"

    def client(self, headers: dict[str, str]) -> httpx2.AsyncClient:
        return httpx2.AsyncClient(headers=headers, timeout=HTTP_TIMEOUT, event_hooks={"response": [self._response]})

    def factory(
        self,
        headers: dict[str, str] | None = None,
        timeout: httpx2.Timeout | None = None,
        auth: httpx2.Auth | None = None,
    ) -> httpx2.AsyncClient:
        """An `McpHttpClientFactory` (the SDK's SSE client builds its own client through it)."""
        return httpx2.AsyncClient(
            headers=headers,
            timeout=timeout or HTTP_TIMEOUT,
            auth=auth,
            event_hooks={"response": [self._response]},
        )

    async def _response(self, response: httpx2.Response) -> None:
        status = response.status_code
        if status < 400 and (session := response.headers.get(SESSION_HEADER)):
            self.session_id = session
        if status < 400:
            self.auth_failure = None
            return
        if status in (401, 403):
            self.auth_failure = auth_message(self.server, status, response.headers.get("www-authenticate"))
        text = await error_text(response)
        described = f"HTTP {status} {_phrase(status)}" + (f": {text}" if text else "")
        session = response.request.headers.get(SESSION_HEADER)
        if session and (status == 404 or (status == 400 and SESSION_GONE_RE.search(text))):
            detail = f": {text}" if text else ""
            self._on_session_gone(f"ended its session (HTTP {status} for session {session[:40]}{detail})")
        request_id = _request_id(response.request)
        if request_id is not None:
            if len(self._errors) >= PENDING_LIMIT:
                self._errors.clear()
            self._errors[request_id] = described

    def received(self, item: Any) -> Any:
        """A message on its way to the SDK's session: the SDK's stand-in for an error status becomes
        the server's own text."""
        message = getattr(item, "message", None)
        if not isinstance(message, types.JSONRPCError):
            return item
        described = self._errors.pop(message.id, None)
        if described is not None and message.error.message == SDK_STAND_IN:
            message.error.message = described
        return item

    def sent(self, item: Any) -> None:
        """Nothing to note on the way out (listing.filtered calls every observer both ways)."""


async def error_text(response: httpx2.Response) -> str:
    """The server's own words in an error answer: a JSON-RPC error's message, a JSON "error" or
    "message", or plain text; "" for HTML pages, bodies too big to read here, and empty ones."""
    kind = response.headers.get("content-type", "").lower()
    is_json = kind.startswith("application/json")
    size = response.headers.get("content-length", "")
    if not is_json and not (kind.startswith("text/plain") and size.isdigit() and int(size) <= ERROR_BODY_LIMIT):
        return ""
    try:
        body = await response.aread()  # kept: the SDK reads the same body after this hook
    except httpx2.HTTPError:
        return ""
    text = body.decode("utf-8", "replace")
    if is_json:
        with contextlib.suppress(ValueError):
            text = _json_message(json.loads(text)) or text
    return " ".join(text.split())[:ERROR_TEXT_LIMIT]


def _json_message(data: Any) -> str:
    if isinstance(data, dict):
        error = data.get("error")
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            return error["message"]
        for key in ("error", "message", "detail"):
            if isinstance(data.get(key), str):
                return data[key]
    return ""


def _request_id(request: httpx2.Request) -> Any:
    """The JSON-RPC id of the request this POST carried (None for notifications, GET, DELETE)."""
    if request.method != "POST":
        return None
    try:
        data = json.loads(request.content)
    except (ValueError, httpx2.RequestNotRead):
        return None
    return data.get("id") if isinstance(data, dict) else None


def _phrase(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return "error"


def auth_message(server: str, status: int, challenge: str | None) -> str:
    """'HTTP 401 Unauthorized (WWW-Authenticate: Bearer realm="x"): check the Authorization header of
    MCP server "docs" (its "headers" in mcp.json)'."""
    reason = HTTPStatus(status).phrase
    hint = f" (WWW-Authenticate: {challenge[:CHALLENGE_LIMIT]})" if challenge else ""
    return (
        f'HTTP {status} {reason}{hint}: check the Authorization header of MCP server "{server}" '
        '(its "headers" in mcp.json)'
    )
