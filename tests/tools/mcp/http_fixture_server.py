"""The fixture server (mcp_fixture_server.py) over streamable HTTP in a process of its own, for tests
that stop, restart or freeze it: `python http_fixture_server.py <fd> [--token T]` serves on the
listening socket inherited as file descriptor <fd> (bound by the test, so clients can connect before
this process is up, and a restarted server keeps the address). With `--token`, a request without
`Authorization: Bearer <T>` gets 401 and a WWW-Authenticate challenge. With `--sse`, it speaks the
legacy HTTP+SSE transport instead (GET /sse, POST /messages/). On SIGUSR1 it forgets every session
it gave out so far, as a restarted server does, while its connections stay open (a killed process
resets them, and the client may notice that first). With `--ts-sessions`, a request for a session it
does not know is answered as servers built on the TypeScript SDK's examples do (the reference
`everything` server): HTTP 400 with a JSON-RPC error without an id, "Bad Request: No valid session
ID provided", rather than the specification's 404. A call whose arguments hold FAIL_WITH_503 is
answered HTTP 503 with a plain-text reason, as a proxy in front of a server does. With `--tasks`, it
serves task_server.py's tools (tasks, per the 2026-07-28 extension: give `--modern` too) instead. With
`--extra-tool NAME`, it also has a tool NAME from the start (a new version of the server, restarted).
When it is stopped (SIGTERM) it ends its `subscriptions/listen` streams gracefully, as a server shut
down for a new version does (the SDK's ListenHandler.close)."""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
import socket

import mcp_types as types
import uvicorn
from mcp import MCPError
from mcp_fixture_server import server

REALM_CHALLENGE = 'Bearer realm="fixture", error="invalid_token"'
SESSION_NOT_FOUND = {"jsonrpc": "2.0", "id": "server-error", "error": {"code": -32600, "message": "Session not found"}}
NO_SESSION = {"jsonrpc": "2.0", "error": {"code": -32000, "message": "Bad Request: No valid session ID provided"}}
FAIL_WITH_503 = "__answer_with_http_503__"
REASON_503 = "upstream is down for maintenance"


def require_token(app, token: str):
    async def guarded(scope, receive, send):
        headers = dict(scope.get("headers") or [])
        if scope["type"] == "http" and headers.get(b"authorization") != f"Bearer {token}".encode():
            await send(
                {
                    "type": "http.response.start",
                    "status": 401,
                    "headers": [(b"www-authenticate", REALM_CHALLENGE.encode()), (b"content-length", b"0")],
                }
            )
            await send({"type": "http.response.body", "body": b""})
            return
        await app(scope, receive, send)

    return guarded


async def respond(send, status: int, body: bytes, content_type: bytes) -> None:
    headers = [(b"content-type", content_type), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def answering_as_told(app, *, sessions_400: bool):
    """`app` with the answers of the module docstring: forgotten sessions and FAIL_WITH_503."""
    given: set[bytes] = set()  # the session ids given out since the last SIGUSR1
    forgotten: set[bytes] = set()  # ... and before it: never known again, even by an answer in flight then
    # (a ping or the GET stream answered just after the signal carries the old id in its headers).

    def forget(*_) -> None:
        forgotten.update(given)
        given.clear()

    signal.signal(signal.SIGUSR1, forget)

    async def wrapped(scope, receive, send):
        if scope["type"] != "http":
            await app(scope, receive, send)
            return
        chunks, more = [], True
        while more:
            message = await receive()
            chunks.append(message)
            more = message.get("more_body", False)
        if FAIL_WITH_503.encode() in b"".join(chunk.get("body", b"") for chunk in chunks):
            await respond(send, 503, REASON_503.encode(), b"text/plain; charset=utf-8")
            return
        session = dict(scope["headers"]).get(b"mcp-session-id")
        if session is not None and session not in given:
            unknown = NO_SESSION if sessions_400 else SESSION_NOT_FOUND
            await respond(send, 400 if sessions_400 else 404, json.dumps(unknown).encode(), b"application/json")
            return

        async def replay():
            return chunks.pop(0) if chunks else await receive()

        async def answer(message):
            if message["type"] == "http.response.start":
                given.update(v for name, v in message["headers"] if name == b"mcp-session-id" and v not in forgotten)
            await send(message)

        await app(scope, replay, answer)

    return wrapped


async def no_discover(ctx, params):
    """Refuse the 2026-07-28 probe, as handshake-era servers (most deployed ones) do: the client then
    falls back to `initialize` and a session with an `Mcp-Session-Id`."""
    raise MCPError(code=types.METHOD_NOT_FOUND, message="Method not found")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("fd", type=int)
    parser.add_argument("--token", default="")
    parser.add_argument("--modern", action="store_true", help="also speak 2026-07-28 (sessionless)")
    parser.add_argument("--sse", action="store_true", help="the legacy HTTP+SSE transport")
    parser.add_argument("--ts-sessions", action="store_true", help="400 for an unknown session, as TypeScript servers")
    parser.add_argument("--tasks", action="store_true", help="task_server.py's tools, which run as tasks")
    parser.add_argument("--extra-tool", default="", help="one more tool, there from the start")
    options = parser.parse_args()
    served = server
    if options.tasks:
        from task_server import server as served
    if options.extra_tool:
        extra = options.extra_tool

        def extra_tool() -> str:
            return f"{extra} is in this version"

        served.add_tool(extra_tool, name=extra, description="A tool of a newer version of the server.")
    if not options.modern:
        served._lowlevel_server.add_request_handler("server/discover", types.RequestParams, no_discover)
    app = served.sse_app() if options.sse else served.streamable_http_app()
    if not options.sse:
        app = answering_as_told(app, sessions_400=options.ts_sessions)
    if options.token:
        app = require_token(app, options.token)
    listener = socket.socket(fileno=options.fd)
    listen = served._lowlevel_server._request_handlers.get("subscriptions/listen")
    GracefulServer(uvicorn.Config(app, log_level="warning", lifespan="on"), listen).run(sockets=[listener])


class GracefulServer(uvicorn.Server):
    """uvicorn's server that ends the open listen streams (their final frame) while it shuts down,
    also those opened meanwhile (uvicorn waits for every request in flight to finish)."""

    def __init__(self, config: uvicorn.Config, listen) -> None:
        super().__init__(config)
        self.listen = getattr(listen, "handler", None)

    async def shutdown(self, sockets=None) -> None:
        closing = asyncio.ensure_future(self._keep_closing())
        try:
            await super().shutdown(sockets)
        finally:
            closing.cancel()

    async def _keep_closing(self) -> None:
        while hasattr(self.listen, "close"):
            self.listen.close()
            await asyncio.sleep(0.05)


if __name__ == "__main__":
    main()
