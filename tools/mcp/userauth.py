"""What an mcp.json entry says about per-user credentials: `"auth": {"type": "oauth", ...}` (each user
connects with their own account, tools/mcp/oauth.py) and `${user:NAME}` in `headers` or `env` (a
named secret each user saves in Settings → Connections). Parsed here for config.py; a server with
either is *per user*: one connection per (server, user), never shared (userpool.py).

    "github": {"url": "https://api.example.com/mcp",
               "headers": {"Authorization": "Bearer ${user:GITHUB_TOKEN}"}}
    "linear": {"url": "https://mcp.linear.app/mcp",
               "auth": {"type": "oauth", "clientId": "…", "clientSecret": "${LINEAR_SECRET}", "scopes": ["read"]}}
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

USER_REF_RE = re.compile(r"\$\{user:([A-Za-z_][A-Za-z0-9_]*)\}")
AUTH_KEYS = {"type", "clientId", "clientSecret", "scopes"}
Fail = Callable[[str], ValueError]
Expand = Callable[[str, str], str]


@dataclass(frozen=True)
class OAuthSettings:
    """`"auth": {"type": "oauth"}`: a pre-registered client (`clientId`, `clientSecret` from the
    environment) or none (client ID metadata document or dynamic registration); the scopes to ask."""

    client_id: str | None = None
    client_secret: str | None = None
    scopes: tuple[str, ...] = ()


def parse_auth(entry: Mapping, kind: str, expand: Expand, fail: Fail) -> OAuthSettings | None:
    value = entry.get("auth")
    if value is None:
        return None
    if kind == "stdio":
        raise fail('"auth" applies to "type": "http" servers only (a local process has no authorization server)')
    if not isinstance(value, dict) or value.get("type") != "oauth":
        raise fail('"auth" must be {"type": "oauth"} (with optional "clientId", "clientSecret", "scopes")')
    unknown = sorted(set(value) - AUTH_KEYS)
    if unknown:
        raise fail(f'unknown key "auth.{unknown[0]}" (known keys: {", ".join(sorted(AUTH_KEYS))})')
    texts = {}
    for key in ("clientId", "clientSecret"):
        text = value.get(key)
        if text is not None and (not isinstance(text, str) or not text):
            raise fail(f'"auth.{key}" must be a non-empty string')
        texts[key] = None if text is None else expand(text, f"auth.{key}")
    if texts["clientSecret"] and not texts["clientId"]:
        raise fail('"auth.clientSecret" needs "auth.clientId"')
    scopes = value.get("scopes", [])
    if isinstance(scopes, str):
        scopes = scopes.split()
    if not isinstance(scopes, list) or not all(isinstance(s, str) and s and " " not in s for s in scopes):
        raise fail('"auth.scopes" must be a list of scope names (or one space-separated string)')
    return OAuthSettings(client_id=texts["clientId"], client_secret=texts["clientSecret"], scopes=tuple(scopes))


def allow_private_network(entry: Mapping, fail: Fail) -> bool:
    value = entry.get("allowPrivateNetwork", False)
    if not isinstance(value, bool):
        raise fail('"allowPrivateNetwork" must be true or false')
    return value


def user_variables(values: Iterable[str]) -> tuple[str, ...]:
    """The `${user:NAME}` names the values use, sorted, each once."""
    return tuple(sorted({name for value in values for name in USER_REF_RE.findall(value)}))


class MissingUserSecrets(LookupError):
    """The user has not saved every named secret the server's entry uses."""

    def __init__(self, server: str, names: Iterable[str]) -> None:
        self.server = server
        self.names = tuple(sorted(names))
        super().__init__(f'MCP server "{server}" needs your {", ".join(self.names)} (Settings → Connections)')


def fill_user_values(server: str, values: Mapping[str, str], secrets: Mapping[str, str]) -> dict[str, str]:
    """`values` with each `${user:NAME}` replaced by the user's secret; MissingUserSecrets names the
    ones the user has not saved."""
    missing = {name for value in values.values() for name in USER_REF_RE.findall(value)} - set(secrets)
    if missing:
        raise MissingUserSecrets(server, missing)
    return {key: USER_REF_RE.sub(lambda m: secrets[m.group(1)], value) for key, value in values.items()}
