"""Restarting servers whose code changed while their mcp.json entry did not: `manage.py mcp_reload`
alone says "Nothing changed" then, so `mcp_reload --restart <server>` / `--all` (and the admin's
Restart buttons) ask every running host, through the restart request file, to restart them."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from tests.helpers.mcp import START_TIMEOUT, all_settled, by_name, fixture_entry, write_config
from tools.mcp.host import McpHost
from tools.mcp.reload import RESTART_FILE, RESTART_FILE_LIMIT, RestartRequests, request_restart
from tools.registry import ToolRegistry

SERVER_CODE = """from mcp.server.mcpserver import MCPServer

server = MCPServer("versioned")


@server.tool()
def version() -> str:
    return {version!r}


server.run()
"""


def call(registry: ToolRegistry, tool: str, /, **arguments):
    return asyncio.run(registry.get(tool).execute(json.dumps(arguments), None))


@pytest.fixture
def machine(tmp_path, settings):
    """Hosts as the web and worker processes of one machine run them: one config, one var directory
    (settings.VAR_DIR, where mcp_reload writes), each polling every 50 ms."""
    settings.VAR_DIR = tmp_path / "var"
    code = tmp_path / "versioned_server.py"
    code.write_text(SERVER_CODE.format(version="one"))
    write_config(
        tmp_path / "mcp.json",
        {"versioned": {"command": "python", "args": [str(code)]}, "other": fixture_entry()},
    )
    hosts = []

    def start() -> tuple[McpHost, ToolRegistry]:
        registry = ToolRegistry("mcp")
        host = McpHost(
            tmp_path / "mcp.json",
            registry=registry,
            reload_file=tmp_path / "var" / "mcp-reload",
            restart_file=tmp_path / "var" / RESTART_FILE,
            reload_poll=0.05,
        )
        hosts.append(host)
        host.start()
        host.wait_until_sync(all_settled, START_TIMEOUT)
        return host, registry

    yield start, code
    for host in hosts:
        host.stop()


def restarted(name: str, before) -> Callable[[list], bool]:
    return lambda s: by_name(s)[name].state == "ready" and by_name(s)[name].pid != before[name].pid


@pytest.mark.slow
def test_mcp_reload_restart_runs_the_changed_code_in_every_process(machine, tmp_path, capsys):
    start, code = machine
    (web, web_tools), (worker, worker_tools) = start(), start()
    before = {host: by_name(host.status()) for host in (web, worker)}
    code.write_text(SERVER_CODE.format(version="two"))  # the server's code changed, its entry did not

    call_command("mcp_reload", config=tmp_path / "mcp.json")
    time.sleep(0.3)  # six polls: a plain reload finds nothing to do
    assert call(web_tools, "versioned__version").result == "one"

    call_command("mcp_reload", "--restart", "versioned", config=tmp_path / "mcp.json")

    for host, registry in ((web, web_tools), (worker, worker_tools)):
        after = by_name(host.wait_until_sync(restarted("versioned", before[host]), START_TIMEOUT))
        assert after["other"].pid == before[host]["other"].pid  # only the one asked for
        assert call(registry, "versioned__version").result == "two"
    assert "running web and worker processes apply any change to" in capsys.readouterr().out


@pytest.mark.slow
def test_mcp_reload_all_restarts_every_server_once(machine, tmp_path):
    start, _ = machine
    host, _ = start()
    before = by_name(host.status())

    call_command("mcp_reload", "--all", config=tmp_path / "mcp.json")

    after = by_name(host.wait_until_sync(lambda s: all(restarted(n, before)(s) for n in before), START_TIMEOUT))
    time.sleep(0.3)
    assert by_name(host.status()) == after  # not restarted a second time


@pytest.mark.slow
def test_a_restart_asked_of_one_host_reaches_the_others_and_is_not_repeated_there(machine):
    start, _ = machine
    (web, _), (worker, _) = start(), start()
    before = {host: by_name(host.status()) for host in (web, worker)}

    assert web.request_restart(["versioned"]) == ("versioned",)  # what the admin's Restart button does
    assert web.request_restart(["absent"]) == ()

    for host in (web, worker):
        host.wait_until_sync(restarted("versioned", before[host]), START_TIMEOUT)
    settled = by_name(web.status())
    time.sleep(0.3)
    assert by_name(web.status())["versioned"].pid == settled["versioned"].pid  # its own request is not applied twice


@pytest.mark.parametrize(
    ("servers", "message"),
    [
        ({"off": {"command": "python", "disabled": True}}, 'MCP server "off" is disabled in'),
        ({"bad": {"comand": "x"}}, 'MCP server "bad": unknown key "comand"'),
        ({"one": {"command": "python"}}, 'MCP server "absent" is not in'),
    ],
)
def test_mcp_reload_restart_refuses_a_server_it_cannot_restart(tmp_path, settings, servers, message):
    settings.VAR_DIR = tmp_path / "var"
    write_config(tmp_path / "mcp.json", servers)
    name = "absent" if "one" in servers else next(iter(servers))
    with pytest.raises(CommandError, match=message):
        call_command("mcp_reload", "--restart", name, config=tmp_path / "mcp.json")
    assert not (tmp_path / "var" / RESTART_FILE).exists()


def test_restart_requests_are_read_once_from_where_the_reader_started(tmp_path):
    request_restart(tmp_path, ["old"])
    reader = RestartRequests(tmp_path / RESTART_FILE)  # a host started after that request
    _, first = request_restart(tmp_path, ["a", "b"])
    _, second = request_restart(tmp_path, None)
    with open(tmp_path / RESTART_FILE, "a") as requests:
        requests.write("half-written")

    assert reader.new() == [(first, ("a", "b")), (second, None)]
    assert reader.new() == []
    with open(tmp_path / RESTART_FILE, "a") as requests:
        requests.write(" c\n")
    assert reader.new() == [("half-written", ("c",))]


def test_a_full_request_file_is_replaced_and_read_from_its_start(tmp_path):
    path = tmp_path / RESTART_FILE
    path.write_text("x" * (RESTART_FILE_LIMIT + 1) + "\n")
    reader = RestartRequests(path)

    _, request = request_restart(tmp_path, ["a"])

    assert path.stat().st_size < 100
    assert reader.new() == [(request, ("a",))]
    assert [p.name for p in Path(tmp_path).iterdir()] == [RESTART_FILE]
