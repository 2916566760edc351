"""mcp.json: the Claude Desktop / Cursor / VS Code "mcpServers" format, with errors that name the
server and the field, and one broken entry never taking the others down."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest
from django.conf import settings

from tools.mcp.config import McpConfigError, load_config, parse_config

ENV = {"PGPASSWORD": "s3cret", "DOCS_TOKEN": "tok-123", "DATA": "/srv/data"}


def parse(servers: dict, tmp_path: Path, environ: dict | None = None):
    return parse_config(
        {"mcpServers": servers}, path=tmp_path / "mcp.json", environ=ENV if environ is None else environ
    )


def error_of(entry: dict, tmp_path: Path, name: str = "sql") -> str:
    config = parse({name: entry}, tmp_path)
    assert config.servers == ()
    return str(config.errors[name])


def test_a_stdio_server_with_env_expanded_from_the_environment(tmp_path):
    config = parse(
        {
            "sql": {
                "command": "python",
                "args": ["-m", "tools.mcp.sql_server", "${DATA}/shop.sqlite3"],
                "env": {"PGPASSWORD": "${PGPASSWORD}", "MODE": "ro"},
                "timeout": 5,
            }
        },
        tmp_path,
    )

    (server,) = config.servers
    assert server.type == "stdio"
    assert server.command == sys.executable  # "python" is the interpreter running Aptix (the venv's)
    assert server.args == ("-m", "tools.mcp.sql_server", "/srv/data/shop.sqlite3")
    assert server.env == {"PGPASSWORD": "s3cret", "MODE": "ro"}
    assert server.cwd == str(tmp_path)  # the config file's directory by default
    assert server.timeout == 5.0
    assert server.disabled is False


def test_defaults_and_vs_code_style_env_references(tmp_path):
    (server,) = parse({"sql": {"command": "python3", "env": {"PGPASSWORD": "${env:PGPASSWORD}"}}}, tmp_path).servers
    assert server.env == {"PGPASSWORD": "s3cret"}
    assert server.timeout == 60.0


def test_commands_are_found_in_the_venv_first_then_on_path(tmp_path):
    config = parse({"time": {"command": "mcp-server-time"}, "shell": {"command": "sh"}}, tmp_path)
    time_server, shell = config.servers
    assert time_server.command == str(Path(sys.executable).parent / "mcp-server-time")
    assert shell.command == shutil.which("sh")


def test_a_relative_cwd_is_resolved_against_the_config_file(tmp_path):
    (tmp_path / "servers").mkdir()
    (server,) = parse({"sql": {"command": "python", "cwd": "servers"}}, tmp_path).servers
    assert server.cwd == str(tmp_path / "servers")


def test_an_http_server_with_headers_from_the_environment(tmp_path):
    config = parse(
        {"docs": {"url": "https://mcp.example.com/mcp", "headers": {"Authorization": "Bearer ${DOCS_TOKEN}"}}}, tmp_path
    )

    (server,) = config.servers
    assert server.type == "http"  # inferred from "url"
    assert server.url == "https://mcp.example.com/mcp"
    assert server.headers == {"Authorization": "Bearer tok-123"}
    assert server.disabled is False


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        (
            {"command": "python", "args": "-m tools.mcp.sql_server"},
            'MCP server "sql": "args" must be a list of strings',
        ),
        ({"command": "python", "args": ["-m", 3]}, 'MCP server "sql": "args" must be a list of strings'),
        ({"comand": "python"}, 'MCP server "sql": unknown key "comand" (did you mean "command"?)'),
        ({"args": []}, 'MCP server "sql": "command" is required (a non-empty string)'),
        (
            {"command": "python", "env": {"PGPASSWORD": "${PG_PASS}"}},
            'MCP server "sql": "env.PGPASSWORD" uses ${PG_PASS}, which is not set in the environment',
        ),
        ({"command": "python", "env": {"PORT": 5432}}, 'MCP server "sql": "env" must be an object of strings'),
        ({"command": "python", "timeout": 0}, 'MCP server "sql": "timeout" must be a positive number of seconds'),
        ({"command": "python", "timeout": "5"}, 'MCP server "sql": "timeout" must be a positive number of seconds'),
        ({"command": "python", "disabled": "yes"}, 'MCP server "sql": "disabled" must be true or false'),
        ({"command": "python", "type": "ws"}, 'MCP server "sql": "type" must be "stdio", "http" or "sse", not \'ws\''),
        (
            {"command": "python", "url": "http://x"},
            'MCP server "sql": "url" does not apply to a "type": "stdio" server',
        ),
        (
            {"type": "http", "url": "ftp://x"},
            'MCP server "sql": "url" must start with http:// or https://, not \'ftp://x\'',
        ),
        ({"type": "http"}, 'MCP server "sql": "url" is required for a "type": "http" server'),
        (
            {"url": "https://x", "headers": {"Authorization": "Bearer ${NO_TOKEN}"}},
            'MCP server "sql": "headers.Authorization" uses ${NO_TOKEN}, which is not set in the environment',
        ),
        ({"command": "python", "cwd": "missing"}, 'MCP server "sql": "cwd" {tmp}/missing is not a directory'),
        (
            {"command": "no-such-mcp-server"},
            'MCP server "sql": "command" \'no-such-mcp-server\' was not found '
            f"(looked in {Path(sys.executable).parent} and PATH)",
        ),
        ("python -m server", 'MCP server "sql": the entry must be an object'),
    ],
)
def test_a_broken_entry_names_the_server_and_the_field(tmp_path, entry, message):
    assert error_of(entry, tmp_path) == message.replace("{tmp}", str(tmp_path))


@pytest.mark.parametrize("name", ["my__sql", "sql.read", "", "a" * 62, "sql server", "sql_", "_"])
def test_server_names_must_be_usable_in_tool_names(tmp_path, name):
    assert "the server name must be 1-61 letters, digits, '_' or '-'" in error_of({"command": "python"}, tmp_path, name)


def test_a_server_name_ending_in_an_underscore_is_refused_so_tool_names_split_one_way(tmp_path):
    """`a_` + `x` and `a` + `_x` would both be `a___x`; split at the first "__" it is always `a` + `_x`."""
    config = parse({"a_": {"command": "python"}, "a": {"command": "python"}, "_a": {"command": "python"}}, tmp_path)

    assert [s.name for s in config.servers] == ["a", "_a"]
    assert str(config.errors["a_"]) == (
        'MCP server "a_": the server name must be 1-61 letters, digits, \'_\' or \'-\', without "__" and not '
        "ending in '_' (its tools are named <server>__<tool>)"
    )


@pytest.mark.parametrize(
    ("entry", "field", "reference"),
    [
        ({"command": "python", "env": {"FILE": "${command:pickFile}"}}, "env.FILE", "${command:pickFile}"),
        ({"command": "python", "args": ["${env:}"]}, "args[0]", "${env:}"),
        ({"command": "python", "env": {"KEY": "${ PGPASSWORD }"}}, "env.KEY", "${ PGPASSWORD }"),
    ],
)
def test_a_reference_other_than_an_environment_variable_is_an_error_not_passed_on(tmp_path, entry, field, reference):
    assert error_of(entry, tmp_path) == (
        f'MCP server "sql": "{field}" uses {reference}, which Aptix cannot expand: '
        "only ${VAR} and ${env:VAR} (environment variables) are supported"
    )


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ({"command": "python", "max_message_mb": 0}, '"max_message_mb" must be a positive number of MiB'),
        ({"command": "python", "ping_interval": -1}, '"ping_interval" must be a positive number or 0 of seconds'),
    ],
)
def test_the_message_size_and_ping_settings_are_checked(tmp_path, entry, message):
    assert error_of(entry, tmp_path) == f'MCP server "sql": {message}'


def test_message_size_and_ping_settings_have_defaults_and_can_be_set(tmp_path):
    default, tuned = parse(
        {"a": {"command": "python"}, "b": {"command": "python", "max_message_mb": 0.5, "ping_interval": 0}}, tmp_path
    ).servers
    assert (default.max_message_bytes, default.ping_interval) == (16 * 1024 * 1024, 30.0)
    assert (tuned.max_message_bytes, tuned.ping_interval) == (512 * 1024, 0.0)


def test_one_broken_entry_leaves_the_others_alone(tmp_path):
    config = parse(
        {
            "time": {"command": "mcp-server-time"},
            "sql": {"command": "python", "args": "oops"},
            "docs": {"url": "https://mcp.example.com/mcp"},
        },
        tmp_path,
    )
    assert [s.name for s in config.servers] == ["time", "docs"]
    assert list(config.errors) == ["sql"]


def test_file_level_problems_are_reported_with_the_path(tmp_path):
    missing = tmp_path / "absent.json"
    with pytest.raises(McpConfigError, match=f"MCP config file {missing} does not exist"):
        load_config(missing)
    broken = tmp_path / "broken.json"
    broken.write_text('{"mcpServers": {\n  "time": {"command": "mcp-server-time"}\n  "sql": {}}}')
    with pytest.raises(McpConfigError) as syntax_error:
        load_config(broken)
    assert str(syntax_error.value) == (
        f"MCP config file {broken} is not valid JSON: line 3, column 3: Expecting ',' delimiter"
    )
    wrong = tmp_path / "wrong.json"
    wrong.write_text(json.dumps({"tools": {}}))
    with pytest.raises(McpConfigError, match='must be an object with an "mcpServers" \\(or VS Code'):
        load_config(wrong)


def test_the_shipped_mcp_json_runs_time_and_the_demo_sql_and_notes_servers_from_the_repo_root():
    config = load_config(settings.BASE_DIR / "mcp.json", environ={})
    assert config.errors == {}
    time_server, sql, notes = config.servers
    assert (time_server.name, Path(time_server.command).name) == ("time", "mcp-server-time")
    assert (sql.name, sql.command, sql.cwd) == ("sql", sys.executable, str(settings.BASE_DIR))
    assert sql.args == ("-m", "tools.mcp.sql_server", "sqlite:///var/demo.sqlite3")
    assert (notes.name, notes.command, notes.cwd) == ("notes", sys.executable, str(settings.BASE_DIR))
    assert notes.args == ("-m", "tools.notes_mcp", "var/notes.md")


def test_a_disabled_server_is_kept_without_its_command_or_variables(tmp_path):
    """Switching a server off is how people park one that is not installed or configured yet."""
    config = parse(
        {"later": {"command": "not-installed-server", "env": {"KEY": "${APTIX_UNSET_VARIABLE}"}, "disabled": True}},
        tmp_path,
    )
    (server,) = config.servers
    assert server.disabled and not config.errors
