"""mcp.json entries with per-user credentials: `"auth": {"type": "oauth"}` and `${user:NAME}` in
headers and env, validated when the file is loaded; such a server is per user, and without
APTIX_SECRETS_KEY start-up stops saying so."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers.mcp import write_config
from tools.mcp.config import parse_config
from tools.mcp.userauth import MissingUserSecrets, fill_user_values
from tools.mcp.usercheck import check_secrets_key


def parse(servers: dict, tmp_path: Path, environ: dict | None = None):
    return parse_config({"mcpServers": servers}, path=tmp_path / "mcp.json", environ=environ or {})


def only(config):
    assert not config.errors, config.errors
    return config.servers[0]


def test_user_references_in_headers_are_kept_for_each_user(tmp_path):
    server = only(
        parse(
            {"gh": {"url": "https://mcp.example.com/mcp", "headers": {"Authorization": "Bearer ${user:GITHUB_TOKEN}"}}},
            tmp_path,
        )
    )
    assert server.headers == {"Authorization": "Bearer ${user:GITHUB_TOKEN}"}
    assert server.user_variables == ("GITHUB_TOKEN",) and server.per_user and server.auth is None


def test_user_references_in_a_stdio_servers_env(tmp_path):
    server = only(
        parse({"s": {"command": "python", "env": {"TOKEN": "${user:TOKEN}", "X": "${A}"}}}, tmp_path, {"A": "a"})
    )
    assert server.env["TOKEN"] == "${user:TOKEN}" and server.env["X"] == "a" and server.user_variables == ("TOKEN",)


@pytest.mark.parametrize(
    ("entry", "problem"),
    [
        ({"url": "https://${user:HOST}/mcp"}, '"url" uses ${user:HOST}'),
        ({"command": "python", "args": ["${user:X}"]}, '"args[0]" uses ${user:X}'),
        ({"url": "https://a.example/mcp", "headers": {"A": "${user:bad-name}"}}, "${user:bad-name}"),
        ({"command": "python", "auth": {"type": "oauth"}}, '"auth" applies to "type": "http" servers only'),
        ({"url": "https://a.example/mcp", "auth": {"type": "basic"}}, '"auth" must be {"type": "oauth"}'),
        ({"url": "https://a.example/mcp", "auth": {"type": "oauth", "clientID": "x"}}, 'unknown key "auth.clientID"'),
        ({"url": "https://a.example/mcp", "auth": {"type": "oauth", "clientSecret": "s"}}, 'needs "auth.clientId"'),
        ({"url": "https://a.example/mcp", "auth": {"type": "oauth", "scopes": [1]}}, '"auth.scopes" must be'),
        ({"url": "https://a.example/mcp", "allowPrivateNetwork": "yes"}, '"allowPrivateNetwork" must be true or false'),
    ],
)
def test_a_misused_per_user_key_is_an_error_naming_it(tmp_path, entry, problem):
    config = parse({"s": entry}, tmp_path)
    assert not config.servers
    assert problem in str(config.errors["s"])


def test_oauth_settings_read_the_client_secret_from_the_environment(tmp_path):
    entry = {
        "url": "https://a.example/mcp",
        "auth": {"type": "oauth", "clientId": "aptix", "clientSecret": "${SECRET}", "scopes": "read write"},
        "allowPrivateNetwork": True,
    }
    server = only(parse({"s": entry}, tmp_path, {"SECRET": "shh"}))
    assert server.auth.client_id == "aptix" and server.auth.client_secret == "shh"
    assert server.auth.scopes == ("read", "write") and server.per_user and server.allow_private_network


def test_user_values_are_filled_and_missing_ones_named():
    values = {"Authorization": "Bearer ${user:TOKEN}", "X-Org": "${user:ORG}", "Plain": "p"}
    assert fill_user_values("s", values, {"TOKEN": "t", "ORG": "o"}) == {
        "Authorization": "Bearer t",
        "X-Org": "o",
        "Plain": "p",
    }
    with pytest.raises(MissingUserSecrets) as missing:
        fill_user_values("s", values, {"TOKEN": "t"})
    assert missing.value.names == ("ORG",)


def test_start_up_stops_when_per_user_credentials_have_no_key(tmp_path, settings):
    settings.APTIX_MCP_AUTOSTART = True
    settings.APTIX_MCP_CONFIG = str(tmp_path / "mcp.json")
    settings.APTIX_SECRETS_KEY = []
    write_config(tmp_path / "mcp.json", {"time": {"command": "python"}})
    assert check_secrets_key() == []  # no per-user server: no key needed
    write_config(
        tmp_path / "mcp.json",
        {"time": {"command": "python"}, "linear": {"url": "https://a.example/mcp", "auth": {"type": "oauth"}}},
    )
    [error] = check_secrets_key()
    assert error.is_serious() and "APTIX_SECRETS_KEY is not set" in error.msg and '"linear"' in error.msg
    settings.APTIX_SECRETS_KEY = ["k"]
    assert check_secrets_key() == []
