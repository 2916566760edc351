"""Where a user connects the MCP servers that act as each user: Settings → Connections, one form per
such server of mcp.json with a write-only field per named secret its `${user:NAME}` references read
(a saved one shows as saved, never its value). Saving answers the user's turns that wait to connect
that server; *Remove* deletes what is saved. A "connect" card and the API's `connectUrl` link here."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from django.conf import settings
from django.urls import reverse

from connections.sealing import SealBroken
from connections.store import connections_of
from tools.mcp import McpConfigError, ServerConfig, load_config


def connect_url(server: str) -> str:
    """Where the user connects `server`: the authorization flow for an OAuth server (its GET answers
    302 to the authorization server), else their named secrets in Settings → Connections."""
    config = server_of(server)
    if config is not None and config.auth is not None:
        return reverse("mcp-oauth-connect", args=[server])
    return f"{reverse('settings')}#connection-{server}"


@dataclass(frozen=True)
class Connection:
    server: str
    variables: tuple[tuple[str, bool], ...]  # (name, saved)
    oauth: bool
    account: str | None  # "connected as …" (OAuth), None when not connected

    @property
    def complete(self) -> bool:
        return all(saved for _, saved in self.variables) and (not self.oauth or self.account is not None)


def per_user_servers() -> list[ServerConfig]:
    """The enabled mcp.json entries that act as each user (none when the file cannot be used)."""
    path = Path(settings.APTIX_MCP_CONFIG)
    try:
        config = load_config(path) if path.exists() else None
    except McpConfigError:
        return []
    return [server for server in (config.servers if config else ()) if server.per_user and not server.disabled]


def user_connections(user_id: int) -> list[Connection]:
    try:
        saved = connections_of(user_id=user_id)
    except SealBroken:
        saved = {}
    found = []
    for server in per_user_servers():
        mine = saved.get(server.name, {"oauth": None, "secrets": []})
        variables = tuple((name, name in mine["secrets"]) for name in server.user_variables)
        found.append(Connection(server.name, variables, server.auth is not None, mine["oauth"]))
    return found


def server_of(name: str) -> ServerConfig | None:
    return next((server for server in per_user_servers() if server.name == name), None)
