"""An MCP server that serves each user their own data, over streamable HTTP in a process of its own:
`python user_server.py <fd> <url> <tokens.json>` serves on the listening socket inherited as file
descriptor <fd>, as the MCP SDK's resource server: a request without a valid bearer token gets 401
with a WWW-Authenticate challenge naming its protected resource metadata. The tokens file (read at
every request, so a test may revoke one) maps each access token to its user:
{"<token>": {"user": "alice"}}. Tool `my_notes` answers with the calling token's user's notes."""

from __future__ import annotations

import json
import socket
import sys
from pathlib import Path

import uvicorn
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver import Context, MCPServer

NOTES = {"alice": ["alice's first note", "alice's plan"], "bob": ["bob's secret recipe"]}


class FileVerifier:
    def __init__(self, path: Path) -> None:
        self.path = path

    def users(self) -> dict:
        return json.loads(self.path.read_text())

    async def verify_token(self, token: str) -> AccessToken | None:
        entry = self.users().get(token)
        if entry is None:
            return None
        return AccessToken(token=token, client_id="aptix", scopes=[], subject=entry["user"])


def build(url: str, tokens: Path) -> MCPServer:
    verifier = FileVerifier(tokens)
    server = MCPServer(
        "user-data",
        token_verifier=verifier,
        auth=AuthSettings(
            issuer_url="https://auth.example.com", resource_server_url=url, validate_token_resource=False
        ),
    )

    @server.tool()
    def my_notes(ctx: Context) -> str:
        """The calling user's notes."""
        headers = ctx.headers or {}
        token = (headers.get("authorization") or "").removeprefix("Bearer ").strip()
        user = verifier.users().get(token, {}).get("user", "nobody")
        return f"Notes of {user}: " + "; ".join(NOTES.get(user, []))

    return server


def main() -> None:
    fd, url, tokens = int(sys.argv[1]), sys.argv[2], Path(sys.argv[3])
    app = build(url, tokens).streamable_http_app()
    listener = socket.socket(fileno=fd)
    uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on")).run(sockets=[listener])


if __name__ == "__main__":
    main()
