"""`manage.py mcp_status`: starts the configured servers itself and reports, failing when one failed."""

from __future__ import annotations

import json
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from tools.mcp.host import start_mcp_host

pytestmark = pytest.mark.slow  # real subprocesses (servers, workers, web processes)

FIXTURE = Path(__file__).with_name("mcp_fixture_server.py")


def write_config(tmp_path: Path, servers: dict) -> Path:
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps({"mcpServers": servers}))
    return path


def test_a_table_of_the_servers_and_a_failure_for_a_broken_one(tmp_path):
    config = write_config(
        tmp_path,
        {
            "fixture": {"command": "python", "args": [str(FIXTURE)]},
            "sql": {"command": "python", "args": "oops"},
            "docs": {"url": "https://mcp.example.com/mcp", "disabled": True},
        },
    )
    out = StringIO()

    with pytest.raises(CommandError, match=r"^1 MCP server\(s\) failed: sql\.$"):
        call_command("mcp_status", "--config", str(config), stdout=out)

    lines = out.getvalue().splitlines()
    assert lines[0].split() == ["SERVER", "STATE", "TOOLS", "ERROR"]
    assert lines[1].split()[:3] == ["fixture", "ready", "9"]  # the fixture server's tools
    assert lines[2].split(maxsplit=3) == ["sql", "failed", "-", 'invalid config: "args" must be a list of strings']
    assert lines[3].split() == ["docs", "disabled", "-"]


def test_json_output_and_success_when_every_enabled_server_is_ready(tmp_path):
    config = write_config(tmp_path, {"fixture": {"command": "python", "args": [str(FIXTURE)]}})
    out = StringIO()

    call_command("mcp_status", "--config", str(config), "--json", stdout=out)

    report = json.loads(out.getvalue())
    assert report["error"] is None
    (server,) = report["servers"]
    assert (server["name"], server["state"]) == ("fixture", "ready")
    assert "fixture__echo" in server["tools"]


def test_a_broken_config_file_is_the_error(tmp_path):
    config = tmp_path / "mcp.json"
    config.write_text("[]")
    with pytest.raises(CommandError, match='must be an object with an "mcpServers" \\(or VS Code'):
        call_command("mcp_status", "--config", str(config), stdout=StringIO())


def test_the_host_does_not_start_itself_in_tests():
    assert start_mcp_host() is None  # APTIX_MCP_AUTOSTART is off (tests/conftest.py)
