"""Live operation against real server processes (the fixture server): a reload starts, stops and
restarts only the servers whose parsed entry changed; `manage.py mcp_reload` reaches a running host
through the reload request file, and an edited mcp.json is noticed by itself; one server restarts
alone; and what servers log (MCP `notifications/message`, stderr) reaches Aptix's log and the
per-server ring buffers."""

from __future__ import annotations

import asyncio
import json
import logging
import threading

import pytest
from django.core.management import call_command

from tests.helpers.mcp import START_TIMEOUT, all_settled, by_name, fixture_entry, write_config
from tools.mcp.host import McpHost
from tools.mcp.logs import LOG_LINES, ServerLog
from tools.registry import ToolRegistry

pytestmark = pytest.mark.slow  # real subprocesses (servers, workers, web processes)


def call(registry: ToolRegistry, tool: str, /, **arguments):
    return asyncio.run(registry.get(tool).execute(json.dumps(arguments), None))


def all_ready(names):
    return lambda statuses: {s.name for s in statuses} == set(names) and all(s.state == "ready" for s in statuses)


@pytest.fixture
def live(tmp_path):
    """A host on tmp_path/mcp.json that polls it and tmp_path/var/mcp-reload every 50 ms."""
    hosts = []

    def start(servers: dict, **options) -> tuple[McpHost, ToolRegistry]:
        registry = ToolRegistry("mcp")
        config = write_config(tmp_path / "mcp.json", servers)
        host = McpHost(config, registry=registry, **options)
        hosts.append(host)
        host.start()
        host.wait_until_sync(all_settled, START_TIMEOUT)
        return host, registry

    yield start
    for host in hosts:
        host.stop()


def test_a_reload_changes_only_what_changed_in_the_config(live, tmp_path):
    host, registry = live(
        {"kept": fixture_entry(), "removed": fixture_entry(), "changed": fixture_entry(env={"WHO": "before"})}
    )
    before = by_name(host.status())

    write_config(
        tmp_path / "mcp.json",
        {"changed": fixture_entry(env={"WHO": "after"}), "kept": fixture_entry(), "added": fixture_entry()},
    )
    result = host.reload()

    assert (result.started, result.restarted, result.stopped, result.unchanged) == (
        ("added",),
        ("changed",),
        ("removed",),
        ("kept",),
    )
    assert result.describe() == "MCP servers started added; restarted changed; stopped removed (1 unchanged)."
    after = by_name(host.wait_until_sync(all_ready(["kept", "changed", "added"]), START_TIMEOUT))
    assert list(after) == ["changed", "kept", "added"]  # the file's order
    assert after["kept"].pid == before["kept"].pid  # untouched
    assert after["changed"].pid != before["changed"].pid
    assert call(registry, "changed__env", name="WHO").result == "after"  # the next turn sees the new tools
    assert call(registry, "added__echo", text="new").result == "new"
    assert "removed__echo" not in registry
    assert host.reload().describe() == "Nothing changed (3 server(s) as before)."


def test_mcp_reload_reaches_a_running_host_through_the_request_file(live, tmp_path, settings):
    settings.VAR_DIR = tmp_path / "var"
    env_file = tmp_path / "fixture.env"
    env_file.write_text("WHO=first\n")
    host, registry = live(
        {"fixture": fixture_entry(envFile="fixture.env")},
        reload_file=tmp_path / "var" / "mcp-reload",
        reload_poll=0.05,
    )
    (first,) = host.status()
    env_file.write_text("WHO=second\n")  # mcp.json itself is unchanged: only a reload request notices

    call_command("mcp_reload", config=tmp_path / "mcp.json")

    host.wait_until_sync(lambda s: s[0].state == "ready" and s[0].pid != first.pid, START_TIMEOUT)
    assert call(registry, "fixture__env", name="WHO").result == "second"


def test_an_edited_config_file_is_applied_by_itself(live, tmp_path):
    host, _ = live({"off": {"command": "python", "disabled": True}}, reload_poll=0.05)

    write_config(tmp_path / "mcp.json", {"off": {"command": "python", "disabled": True}, "broken": {"comand": "x"}})

    statuses = by_name(host.wait_until_sync(lambda s: len(s) == 2, 10))
    assert statuses["broken"].state == "failed"
    assert statuses["broken"].error.startswith('invalid config: unknown key "comand"')


def test_a_file_that_cannot_be_used_keeps_the_running_servers(live, tmp_path):
    host, _ = live({"off": {"command": "python", "disabled": True}})
    (tmp_path / "mcp.json").write_text("{not json")

    result = host.reload()

    assert result.error.endswith(
        "is not valid JSON: line 1, column 2: Expecting property name enclosed in double quotes"
    )
    assert result.describe().endswith("The servers already running were kept.")
    assert [s.name for s in host.status()] == ["off"]


def test_one_server_restarts_alone(live):
    host, registry = live({"one": fixture_entry(), "other": fixture_entry(), "off": {"command": "x", "disabled": True}})
    before = by_name(host.status())

    assert host.restart("one") is True
    assert host.restart("off") is False and host.restart("absent") is False

    after = by_name(
        host.wait_until_sync(
            lambda s: by_name(s)["one"].state == "ready" and by_name(s)["one"].pid != before["one"].pid, START_TIMEOUT
        )
    )
    assert after["other"].pid == before["other"].pid
    assert call(registry, "one__echo", text="back").result == "back"


class Wait(logging.Handler):
    """Sets `seen` when a record matching `match` is logged (from any thread)."""

    def __init__(self, match) -> None:
        super().__init__()
        self.match = match
        self.records: list[logging.LogRecord] = []
        self.seen = threading.Event()

    def emit(self, record: logging.LogRecord) -> None:
        if self.match(record):
            self.records.append(record)
            self.seen.set()


def test_server_log_messages_go_to_the_aptix_log_and_the_ring_buffer(live):
    host, registry = live({"fixture": fixture_entry()})
    wait = Wait(lambda r: getattr(r, "stream", "") == "mcp-log")
    mcp_logger = logging.getLogger("aptix.mcp")
    mcp_logger.addHandler(wait)
    try:
        assert call(registry, "fixture__log", level="warning", text="disk almost full").result == "logged"
        assert wait.seen.wait(10)
    finally:
        mcp_logger.removeHandler(wait)

    (record,) = wait.records
    assert (record.levelno, record.server, record.mcp_level) == (logging.WARNING, "fixture", "warning")
    assert record.getMessage() == "[fixture] (fixture.worker) disk almost full"
    (line,) = host.logs("fixture").messages()
    assert (line.level, line.logger, line.text) == ("warning", "fixture.worker", "disk almost full")
    assert "stderr says: disk almost full" in [line.text for line in host.logs("fixture").stderr()]


def test_the_ring_buffer_keeps_the_last_lines():
    log = ServerLog("chatty")
    for number in range(LOG_LINES + 50):
        log.stderr_line(f"line {number}")
    lines = [line.text for line in log.stderr()]
    assert len(lines) == LOG_LINES and lines[0] == "line 50" and lines[-1] == f"line {LOG_LINES + 49}"
