"""Config formats other than Claude Desktop's: VS Code's `{"servers": …, "inputs": …}` with
`${env:VAR}` and `envFile`, the legacy HTTP+SSE transport, and keys given twice - each against real
server processes (the fixture server over stdio, http_fixture_server.py over SSE)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from tests.helpers.mcp import FIXTURE, START_TIMEOUT, HttpServer, all_settled, by_name
from tools.mcp.config import McpConfigError, load_config, parse_config
from tools.mcp.host import McpHost
from tools.registry import ToolRegistry

pytestmark = pytest.mark.slow  # real subprocesses (servers, workers, web processes)

INPUTS_ERROR = "inputs are not supported here, use ${env:VAR}"


def call(registry: ToolRegistry, tool: str, /, **arguments):
    return asyncio.run(registry.get(tool).execute(json.dumps(arguments), None))


@pytest.fixture
def run_host(tmp_path):
    """Start a host on `text` written as mcp.json; stopped after the test."""
    hosts = []

    def run(text: str) -> tuple[McpHost, ToolRegistry]:
        config = tmp_path / "mcp.json"
        config.write_text(text)
        registry = ToolRegistry("mcp")
        host = McpHost(config, registry=registry)
        hosts.append(host)
        host.start()
        host.wait_until_sync(all_settled, START_TIMEOUT)
        return host, registry

    yield run
    for host in hosts:
        host.stop()


def test_vs_code_servers_with_env_references_and_an_env_file(run_host, tmp_path, monkeypatch):
    monkeypatch.setenv("APTIX_TEST_REGION", "eu-west")
    (tmp_path / "secrets").mkdir()
    (tmp_path / "secrets" / "fixture.env").write_text(
        '# the fixture\'s secrets\nexport API_KEY="k-123 # not a comment"\nDB_URL=sqlite:///x.db  # a comment\n'
        "REGION=from-the-file\n"
    )
    vscode = {
        "inputs": [{"type": "promptString", "id": "token", "description": "Token", "password": True}],
        "servers": {
            "fixture": {
                "type": "stdio",
                "command": "python",
                "args": [str(FIXTURE)],
                "envFile": "secrets/fixture.env",
                "env": {"REGION": "${env:APTIX_TEST_REGION}"},  # env wins over the file
            },
            "prompted": {"command": "python", "args": [str(FIXTURE)], "env": {"TOKEN": "${input:token}"}},
        },
    }
    host, registry = run_host(json.dumps(vscode))

    statuses = by_name(host.status())
    assert statuses["fixture"].state == "ready"
    assert call(registry, "fixture__env", name="API_KEY").result == "k-123 # not a comment"
    assert call(registry, "fixture__env", name="DB_URL").result == "sqlite:///x.db"
    assert call(registry, "fixture__env", name="REGION").result == "eu-west"
    assert statuses["prompted"].state == "failed"
    assert statuses["prompted"].error == f'invalid config: "env.TOKEN" uses ${{input:token}}: {INPUTS_ERROR}'


def test_a_server_name_given_twice_fails_that_server_and_names_it(run_host):
    entry = json.dumps({"command": "python", "args": [str(FIXTURE)]})
    host, registry = run_host(f'{{"mcpServers": {{"fixture": {entry}, "twice": {entry}, "twice": {entry}}}}}')

    statuses = by_name(host.status())
    assert list(statuses) == ["fixture", "twice"]
    assert statuses["fixture"].state == "ready"
    assert statuses["twice"].state == "failed"
    assert (
        statuses["twice"].error == "invalid config: is defined more than once in the config file (remove all but one)"
    )
    assert "twice__echo" not in registry


def test_a_legacy_sse_server_is_served(run_host):
    sse_server = HttpServer()
    sse_server.start("--sse", "--modern")
    try:
        url = sse_server.url.removesuffix("/mcp") + "/sse"
        host, registry = run_host(json.dumps({"mcpServers": {"legacy": {"type": "sse", "url": url, "timeout": 10}}}))
        (status,) = host.wait_until_sync(lambda s: s[0].state == "ready", START_TIMEOUT)
        assert (status.type, status.state) == ("sse", "ready")
        assert call(registry, "legacy__echo", text="over SSE").result == "over SSE"
    finally:
        sse_server.close()


def parse(raw, tmp_path: Path):
    return parse_config(raw, path=tmp_path / "mcp.json", environ={"TOKEN": "t"})


@pytest.mark.parametrize(
    ("entry", "error"),
    [
        ({"command": "python", "envFile": "absent.env"}, '"envFile" {dir}/absent.env does not exist'),
        ({"command": "python", "envFile": "bad.env"}, '"envFile" {dir}/bad.env, line 2: expected KEY=value'),
        (
            {"command": "python", "envFile": "open.env"},
            ('"envFile" {dir}/open.env, line 1: the value opens a " quote it does not close'),
        ),
        ({"type": "sse"}, '"url" is required for a "type": "sse" server'),
        (
            {"type": "sse", "url": "https://x/sse", "envFile": "a.env"},
            '"envFile" does not apply to a "type": "sse" server',
        ),
        ({"command": "python", "initTimeout": 0}, '"initTimeout" must be a positive number of seconds'),
        ({"url": "https://x", "headers": {"A": "${input:a}"}}, f'"headers.A" uses ${{input:a}}: {INPUTS_ERROR}'),
    ],
)
def test_broken_entries_of_the_new_keys_fail_with_a_clear_error(tmp_path, entry, error):
    (tmp_path / "bad.env").write_text("A=1\nnot a line\n")
    (tmp_path / "open.env").write_text('A="unterminated\n')
    config = parse({"servers": {"s": entry}}, tmp_path)
    assert str(config.errors["s"]) == 'MCP server "s": ' + error.replace("{dir}", str(tmp_path))


def test_keys_given_twice_inside_an_entry_are_errors(tmp_path):
    path = tmp_path / "mcp.json"
    path.write_text(
        '{"mcpServers": {"a": {"command": "python", "env": {"K": "1", "K": "2"}}, '
        '"b": {"command": "python", "cwd": ".", "cwd": "/"}}}'
    )
    errors = {name: str(error) for name, error in load_config(path, environ={}).errors.items()}
    assert errors == {
        "a": 'MCP server "a": "env.K" is given more than once',
        "b": 'MCP server "b": "cwd" is given more than once',
    }


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"mcpServers": {}, "servers": {}}', 'has both "mcpServers" and "servers": keep one.'),
        ('{"servers": {}, "servers": {}}', 'has "servers" more than once: keep one.'),
        ('{"inputs": []}', 'must be an object with an "mcpServers" (or VS Code\'s "servers") object.'),
    ],
)
def test_file_level_format_problems(tmp_path, text, message):
    path = tmp_path / "mcp.json"
    path.write_text(text)
    with pytest.raises(McpConfigError) as error:
        load_config(path, environ={})
    assert str(error.value) == f"MCP config file {path} {message}"


def test_timeouts_default_to_timeout_and_init_timeout_may_differ(tmp_path):
    default, short, split = parse(
        {
            "servers": {
                "a": {"command": "python"},
                "b": {"command": "python", "timeout": 5},
                "c": {"command": "python", "timeout": 5, "initTimeout": 120},
            }
        },
        tmp_path,
    ).servers
    assert (default.timeout, default.init_timeout) == (60.0, 60.0)
    assert (short.timeout, short.init_timeout) == (5.0, 5.0)
    assert (split.timeout, split.init_timeout) == (5.0, 120.0)
