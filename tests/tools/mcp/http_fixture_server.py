"""The fixture server (mcp_fixture_server.py) over streamable HTTP in a process of its own, for tests
that stop, restart or freeze it: `python http_fixture_server.py <fd> [--token T]` serves on the
listening socket inherited as file descriptor <fd> (bound by the test, so clients can connect before
this process is up, and a restarted server keeps the address). With `--token`, a request without
`Authorization: Bearer <T>` gets 401 and a WWW-Authenticate challenge. With `--sse`, it speaks the
legacy HTTP+SSE transport instead (GET /sse, POST /messages/)."""

from __future__ import annotations

import argparse
import socket

import mcp_types as types
import uvicorn
from mcp import MCPError
from mcp_fixture_server import server

REALM_CHALLENGE = 'Bearer realm="fixture", error="invalid_token"'


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
    options = parser.parse_args()
    if not options.modern:
        server._lowlevel_server.add_request_handler("server/discover", types.RequestParams, no_discover)
    app = server.sse_app() if options.sse else server.streamable_http_app()
    if options.token:
        app = require_token(app, options.token)
    listener = socket.socket(fileno=options.fd)
    uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on")).run(sockets=[listener])


if __name__ == "__main__":
    main()
