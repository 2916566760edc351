"""VS Code's own mcp.json as VS Code writes it: `//` and `/* */` comments and trailing commas (JSONC),
and the keys VS Code documents for itself (`dev`, `sandbox`), which configure VS Code and are logged
and ignored here; any other unknown key is still an error."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys

import pytest
from django.conf import settings

from tests.helpers.mcp import FIXTURE
from tools.mcp.config import McpConfigError, load_config
from tools.mcp.envfile import without_comments
from tools.mcp.host import McpHost
from tools.registry import ToolRegistry

VSCODE_FILE = """{
    // Servers for this workspace (VS Code keeps comments and trailing commas)
    "inputs": [],
    "servers": {
        "time": {
            "type": "stdio",
            "command": "python", /* the venv's interpreter */
            "args": ["-m", "tools.mcp.sql_server", "sqlite:///x // not a comment",],
            "dev": {"watch": "src/**/*.py", "debug": {"type": "debugpy"}},
            "sandbox": {"network": {"allowedDomains": ["example.com"]}},
        },
        "docs": {"url": "https://mcp.example.com/mcp", "headers": {"X-A": "/* kept */"},},
    },
}
"""


def test_comments_and_trailing_commas_are_read_and_vs_code_only_keys_ignored(tmp_path):
    path = tmp_path / "mcp.json"
    path.write_text(VSCODE_FILE)

    config = load_config(path, environ={})

    assert config.errors == {}
    time, docs = config.servers
    assert time.args == ("-m", "tools.mcp.sql_server", "sqlite:///x // not a comment")
    assert time.ignored == ("dev", "sandbox")
    assert docs.headers == {"X-A": "/* kept */"} and docs.ignored == ()


def test_an_unknown_key_is_still_an_error_and_an_asked_for_sandbox_is_refused(tmp_path):
    path = tmp_path / "mcp.json"
    path.write_text(
        """{"servers": {
            "typo": {"command": "python", "devv": {}},  // a typo, not VS Code's "dev"
            "boxed": {"command": "python", "sandboxEnabled": true},
            "unboxed": {"command": "python", "sandboxEnabled": false},
        }}"""
    )

    config = load_config(path, environ={})

    assert str(config.errors["typo"]).startswith('MCP server "typo": unknown key "devv" (')
    assert str(config.errors["boxed"]) == (
        'MCP server "boxed": "sandboxEnabled" asks VS Code to run this server in its sandbox, which Aptix '
        "cannot do: remove it (or set it to false) to run the server without one"
    )
    assert [server.name for server in config.servers] == ["unboxed"]


def test_errors_after_comments_keep_their_line_and_column(tmp_path):
    path = tmp_path / "mcp.json"
    path.write_text('{\n  /* one\n     two */ // three\n  "servers": {"a": {"command": "python"}\n}')
    with pytest.raises(McpConfigError) as error:
        load_config(path, environ={})
    assert str(error.value).endswith("is not valid JSON: line 5, column 2: Expecting ',' delimiter")


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ('{"a": "http://x//y", "b": "/* c */"}', {"a": "http://x//y", "b": "/* c */"}),
        ('{"a": [1, 2 /* , */ ], "b": "\\\\", "c": "\\" // "}', {"a": [1, 2], "b": "\\", "c": '" // '}),
        ("[1,\n// last\n]", [1]),
        ("{/* a */}", {}),
    ],
)
def test_without_comments_keeps_strings_length_and_lines(text, value):
    stripped = without_comments(text)
    assert len(stripped) == len(text) and stripped.count("\n") == text.count("\n")
    assert json.loads(stripped) == value


def test_the_host_logs_the_ignored_keys(tmp_path, caplog):
    path = tmp_path / "mcp.json"
    path.write_text('{"servers": {"off": {"command": "x", "disabled": true, "dev": {"watch": "*.py"},},}}')
    host = McpHost(path, registry=ToolRegistry("mcp"))
    with caplog.at_level(logging.INFO, logger="aptix.mcp"):
        host.start()
        try:
            host.wait_until_sync(lambda statuses: statuses[0].settled, 10)
        finally:
            host.stop()
    assert 'MCP server "off": ignoring "dev" (VS Code-only: configures VS Code, not the server)' in caplog.text


def manage(tmp_path, config, *command: str) -> subprocess.CompletedProcess:
    """`manage.py <command>` in a process of its own, as an operator runs it, with `config` as mcp.json."""
    env = {
        "PATH": os.environ["PATH"],
        "DJANGO_SETTINGS_MODULE": "aptix.settings",
        "SECRET_KEY": "test-only",
        "DEBUG": "false",
        "DATABASE_URL": "",
        "APTIX_VAR_DIR": str(tmp_path / "var"),
        "APTIX_MCP_CONFIG": str(config),
        "APTIX_MCP_AUTOSTART": "true",
    }
    return subprocess.run(
        [sys.executable, "manage.py", *command],
        cwd=settings.BASE_DIR,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )


@pytest.mark.slow  # real subprocesses (manage.py, the fixture server)
def test_manage_py_accepts_the_comments_and_starts_the_servers_and_a_broken_file_names_its_line(tmp_path):
    config = tmp_path / "mcp.json"
    config.write_text(
        "{\n"
        "  // the workspace's servers\n"
        '  "servers": {\n'
        f'    "fixture": {{"command": {json.dumps(sys.executable)}, /* this venv */\n'
        f'                 "args": [{json.dumps(str(FIXTURE))},],}},\n'
        "  },\n"
        "}\n"
    )

    checked = manage(tmp_path, config, "check")
    assert checked.returncode == 0, checked.stderr
    assert "System check identified no issues" in checked.stdout

    started = manage(tmp_path, config, "mcp_status", "--json")
    assert started.returncode == 0, started.stderr
    [server] = json.loads(started.stdout)["servers"]
    assert (server["name"], server["state"]) == ("fixture", "ready")

    config.write_text('{\n  // fine\n  "servers": {"fixture": {"command": "python"}\n  oops\n}\n')
    broken = manage(tmp_path, config, "check")
    assert broken.returncode != 0
    assert f"MCP config file {config} is not valid JSON: line 4, column 3: Expecting ',' delimiter" in broken.stderr
    assert "JSONDecodeError" not in broken.stderr
