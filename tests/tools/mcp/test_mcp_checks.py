"""mcp.json as a system check: a file that cannot be used, a broken server entry or a key the format
does not have stops start-up naming the file, the server, the key and the problem (VS Code's
`inputs` aside); a file changed under a running process into a bad one is named on /readyz, while
the running servers are kept and the process stays ready."""

from __future__ import annotations

import asyncio
import json

import pytest

from agents.run.health import readiness
from tests.helpers import inline_db
from tests.helpers.mcp import START_TIMEOUT, all_settled, fixture_entry, write_config
from tools.mcp import host as host_module
from tools.mcp.checks import check_mcp_config
from tools.mcp.host import McpHost


@pytest.fixture
def config_file(tmp_path, settings):
    settings.APTIX_MCP_AUTOSTART = True
    settings.APTIX_MCP_CONFIG = str(tmp_path / "mcp.json")
    return tmp_path / "mcp.json"


def messages(config_file) -> list[str]:
    errors = check_mcp_config()
    assert all(error.is_serious() and error.id == "aptix.E002" for error in errors)
    return [error.msg for error in errors]


def test_a_good_file_and_no_file_pass(config_file):
    assert messages(config_file) == []
    write_config(config_file, {"time": {"command": "python"}, "off": {"command": "nowhere", "disabled": True}})
    assert messages(config_file) == []


def test_vs_codes_inputs_list_is_accepted(config_file):
    config_file.write_text(json.dumps({"servers": {"time": {"command": "python"}}, "inputs": [{"id": "token"}]}))
    assert messages(config_file) == []


def test_a_broken_entry_names_the_file_the_server_and_the_key(config_file):
    write_config(config_file, {"good": {"command": "python"}, "typo": {"comand": "python"}})
    expected = f'{config_file}: MCP server "typo": unknown key "comand" (did you mean "command"?)'
    assert messages(config_file) == [expected]


def test_an_unset_variable_names_it(config_file, monkeypatch):
    monkeypatch.delenv("APTIX_NO_SUCH_TOKEN", raising=False)
    docs = {"url": "https://mcp.example.com/mcp", "headers": {"X": "${APTIX_NO_SUCH_TOKEN}"}}
    write_config(config_file, {"docs": docs})
    [message] = messages(config_file)
    assert '"docs"' in message and "APTIX_NO_SUCH_TOKEN" in message and "not set" in message


def test_an_unknown_top_level_key_and_an_unusable_file_are_named(config_file):
    config_file.write_text(json.dumps({"mcpServers": {}, "mcpservers": {}}))
    expected = f'{config_file}: unknown key "mcpservers" (known keys: inputs, mcpServers, servers)'
    assert messages(config_file) == [expected]
    config_file.write_text("{not json")
    [message] = messages(config_file)
    assert str(config_file) in message and "is not valid JSON: line 1" in message


def test_a_process_that_starts_no_mcp_host_does_not_check_the_file(config_file, settings):
    settings.APTIX_MCP_AUTOSTART = False
    config_file.write_text("{not json")
    assert messages(config_file) == []


@inline_db
async def test_a_bad_file_under_a_running_host_is_named_on_readyz_and_the_servers_kept(tmp_path, monkeypatch):
    path = write_config(tmp_path / "mcp.json", {"off": {"command": "python", "disabled": True}})
    host = McpHost(path)
    host.start()
    monkeypatch.setattr(host_module, "_host", host)
    try:
        ready, checks = await readiness()
        assert ready and "config" not in checks
        path.write_text("{not json")
        assert host.reload().error is not None
        ready, checks = await readiness()
        assert ready and checks["mcp"] == {"off": "disabled"}  # what ran before runs on
        assert checks["config"] == (
            "failed: MCP config file mcp.json is not valid JSON: line 1, column 2: "
            "Expecting property name enclosed in double quotes (the running MCP servers were kept)"
        )
    finally:
        host.stop()


@inline_db
async def test_a_running_servers_entry_changed_into_a_broken_one_runs_on_as_it_was(tmp_path, monkeypatch):
    path = write_config(tmp_path / "mcp.json", {"fixture": fixture_entry()})
    host = McpHost(path)
    host.start()
    monkeypatch.setattr(host_module, "_host", host)
    try:
        [running] = await asyncio.to_thread(host.wait_until_sync, all_settled, START_TIMEOUT)
        assert running.state == "ready"
        write_config(path, {"fixture": fixture_entry(timeout="soon")})
        result = await asyncio.to_thread(host.reload)
        assert result.restarted == () and result.stopped == ()
        assert result.describe().endswith('"timeout" must be a positive number of seconds: it runs on as it was.')
        [status] = host.status()
        assert (status.state, status.pid) == ("ready", running.pid)  # the last good entry serves
        ready, checks = await readiness()
        assert ready and checks["config"] == (
            'failed: mcp.json: MCP server "fixture": "timeout" must be a positive number of seconds '
            "(the server runs on as it was)"
        )
        write_config(path, {"fixture": fixture_entry()})  # fixed: as it ran, nothing restarts
        result = await asyncio.to_thread(host.reload)
        assert result.kept == () and result.restarted == ()
        assert "config" not in (await readiness())[1]
    finally:
        await asyncio.to_thread(host.stop)
