"""What the host watches on a streamable-HTTP connection, below the SDK: the HTTP status of each
response, seen through httpx event hooks.

- 404 to a request that carried an `Mcp-Session-Id`: the server no longer knows the session (it
  restarted, or expired it). The MCP specification says the client MUST then start a new session,
  so the connection is marked lost and the supervisor reconnects; the SDK alone would keep sending
  the dead session id and fail every call with "Session not found".
- 401/403: the SDK reports "Server returned an error response"; here the status and the server's
  WWW-Authenticate challenge are kept, so the status says what to fix.
"""

from __future__ import annotations

from collections.abc import Callable
from http import HTTPStatus

import httpx2

HTTP_TIMEOUT = httpx2.Timeout(30.0, read=300.0)  # the SDK's defaults: a response stream may stay open
SESSION_HEADER = "mcp-session-id"
CHALLENGE_LIMIT = 300  # characters of a WWW-Authenticate header quoted in the status


class HttpWatch:
    """The event hooks of one connection's HTTP client and what they saw."""

    def __init__(self, server: str, url: str, on_session_gone: Callable[[str], None]) -> None:
        self.server = server
        self.url = url
        self.auth_failure: str | None = None
        self._on_session_gone = on_session_gone

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
        if status == 404 and response.request.headers.get(SESSION_HEADER):
            self._on_session_gone(
                f"ended its session (HTTP 404 for session {response.request.headers[SESSION_HEADER][:40]})"
            )
        elif status in (401, 403):
            self.auth_failure = auth_message(self.server, status, response.headers.get("www-authenticate"))
        elif status < 400:
            self.auth_failure = None


def auth_message(server: str, status: int, challenge: str | None) -> str:
    """'HTTP 401 Unauthorized (WWW-Authenticate: Bearer realm="x"): check the Authorization header of
    MCP server "docs" (its "headers" in mcp.json)'."""
    reason = HTTPStatus(status).phrase
    hint = f" (WWW-Authenticate: {challenge[:CHALLENGE_LIMIT]})" if challenge else ""
    return (
        f'HTTP {status} {reason}{hint}: check the Authorization header of MCP server "{server}" '
        '(its "headers" in mcp.json)'
    )
