"""An MCP server that serves each user their own data, over streamable HTTP in a process of its own:
`python user_server.py <fd> <url> <tokens.json>` serves on the listening socket inherited as file
descriptor <fd>, as the MCP SDK's resource server: a request without a valid bearer token gets 401
with a WWW-Authenticate challenge naming its protected resource metadata. The tokens file (read at
every request, so a test may revoke one) maps each access token to its user:
{"<token>": {"user": "alice"}}. With `--issuer=<url>` instead of a tokens file, the tokens are the
test provider's (tests/oidc_provider/): each is checked at its introspection endpoint (so a revoked
one is refused at once), and the protected resource metadata names it as the authorization server. Tool
`my_notes` answers with the calling token's user's notes."""

from __future__ import annotations

import json
import socket
import sys
from pathlib import Path

import httpx2
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


class IntrospectionVerifier:
    """Tokens of the test provider, checked by its introspection endpoint (RFC 7662) on every request,
    as the resource server it is (the provider binds tokens to this resource, RFC 8707, so its own
    userinfo endpoint refuses them)."""

    def __init__(self, issuer: str) -> None:
        self.issuer = issuer
        self.seen: dict[str, dict] = {}

    def users(self) -> dict:
        return self.seen

    async def verify_token(self, token: str) -> AccessToken | None:
        async with httpx2.AsyncClient() as client:
            answer = await client.post(
                f"{self.issuer}/introspect/", data={"token": token}, auth=("aptix", "aptix-test-secret")
            )
        if answer.status_code != 200 or not answer.json().get("active"):
            return None
        user = answer.json().get("username") or answer.json()["sub"]
        self.seen[token] = {"user": user}
        return AccessToken(token=token, client_id="aptix-mcp", scopes=[], subject=user)


def build(url: str, tokens: str) -> MCPServer:
    issuer = tokens.removeprefix("--issuer=") if tokens.startswith("--issuer=") else "https://auth.example.com"
    verifier = IntrospectionVerifier(issuer) if tokens.startswith("--issuer=") else FileVerifier(Path(tokens))
    server = MCPServer(
        "user-data",
        token_verifier=verifier,
        auth=AuthSettings(issuer_url=issuer, resource_server_url=url, validate_token_resource=False),
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
    fd, url, tokens = int(sys.argv[1]), sys.argv[2], sys.argv[3]
    app = build(url, tokens).streamable_http_app()
    listener = socket.socket(fileno=fd)
    uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on")).run(sockets=[listener])


if __name__ == "__main__":
    main()
