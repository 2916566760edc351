"""The MCP host against a streamable-HTTP server in a process of its own (http_fixture_server.py, a
handshake-era server with sessions): restarted under a live session, not up yet at start-up, asking
for credentials, and gone for good."""

from __future__ import annotations

import asyncio
import json
import logging

import pytest

from tests.helpers.mcp import START_TIMEOUT, HttpServer, write_config
from tools.mcp.host import McpHost
from tools.registry import ToolRegistry

FAIL_WITH_503 = "__answer_with_http_503__"  # http_fixture_server.py answers a call holding it with:
REASON_503 = "upstream is down for maintenance"

pytestmark = pytest.mark.slow  # real subprocesses (servers, workers, web processes)


@pytest.fixture
def http_server():
    server = HttpServer()
    yield server
    server.close()


@pytest.fixture
def remote(tmp_path, http_server):
    """A host for one HTTP server "remote"; call `start(**entry)` once the server is set up."""
    registry = ToolRegistry("mcp")
    hosts = []

    def start(**entry) -> McpHost:
        config = write_config(tmp_path / "mcp.json", {"remote": {"url": http_server.url, "timeout": 10, **entry}})
        host = McpHost(config, registry=registry)
        hosts.append(host)
        host.start()
        return host

    yield start, registry
    for host in hosts:
        host.stop()


def call(registry: ToolRegistry, tool: str, /, **arguments):
    return asyncio.run(registry.get(tool).execute(json.dumps(arguments), None))


def state(name: str):
    return lambda statuses: statuses[0].state == name


def test_a_restarted_server_gets_a_new_session_and_the_call_goes_through(http_server, remote):
    start, registry = remote
    http_server.start()
    host = start()
    host.wait_until_sync(state("ready"), START_TIMEOUT)
    assert call(registry, "remote__echo", text="first session").result == "first session"

    http_server.kill()
    http_server.start()  # knows nothing of the session: answers 404 for its id

    assert call(registry, "remote__echo", text="second session").result == "second session"
    assert call(registry, "remote__echo", text="and again").result == "and again"
    (status,) = host.wait_until_sync(state("ready"), START_TIMEOUT)
    assert status.restarts == 1
    assert status.error.startswith("ended its session (HTTP 404 for session ")


def test_a_restarted_server_answering_400_for_the_old_session_gets_a_new_one(http_server, remote, caplog):
    """Servers built on the TypeScript SDK's examples (the reference `everything` server among them)
    answer a session they do not know with HTTP 400 "No valid session ID provided", not 404: that
    ends the session too, and the call goes through on a new one instead of failing for good."""
    start, registry = remote
    http_server.start("--ts-sessions")
    host = start()
    host.wait_until_sync(state("ready"), START_TIMEOUT)
    assert call(registry, "remote__echo", text="first session").result == "first session"

    http_server.kill()
    http_server.start("--ts-sessions")
    with caplog.at_level(logging.INFO, logger="aptix.admin"):
        assert call(registry, "remote__echo", text="second session").result == "second session"
    assert call(registry, "remote__echo", text="and again").result == "and again"

    (status,) = host.wait_until_sync(state("ready"), START_TIMEOUT)
    assert status.restarts == 1
    assert status.error.startswith("ended its session (HTTP 400 for session ")
    assert status.error.endswith(": Bad Request: No valid session ID provided)")
    assert any("No valid session ID provided" in r.getMessage() for r in caplog.records if r.name == "aptix.admin")


@pytest.mark.parametrize("options", [["--ts-sessions"], []])
def test_an_idle_session_the_server_forgot_is_noticed_by_the_next_ping(http_server, remote, options):
    """The next ping finds the session gone (404, or 400 from TypeScript-style servers): the status
    does not stay "ready" on a dead session until a call fails."""
    start, registry = remote
    http_server.start(*options)
    host = start(ping_interval=0.5)
    host.wait_until_sync(state("ready"), START_TIMEOUT)

    http_server.forget_sessions()

    (status,) = host.wait_until_sync(lambda s: s[0].state == "ready" and s[0].restarts == 1, START_TIMEOUT)
    assert status.error.startswith(f"ended its session (HTTP {400 if options else 404} for session ")
    assert call(registry, "remote__echo", text="renewed").result == "renewed"


def test_an_error_status_is_reported_with_the_servers_own_text(http_server, remote):
    start, registry = remote
    http_server.start()
    host = start()
    host.wait_until_sync(state("ready"), START_TIMEOUT)

    result = call(registry, "remote__echo", text=FAIL_WITH_503)

    assert result.error_message == f'MCP tool "remote__echo" failed: HTTP 503 Service Unavailable: {REASON_503}'
    assert call(registry, "remote__echo", text="still there").result == "still there"
    assert host.status()[0].restarts == 0


def test_a_server_unreachable_at_start_up_is_retried_until_it_answers(http_server, remote):
    start, registry = remote
    host = start()

    (status,) = host.wait_until_sync(state("failed"), START_TIMEOUT)
    assert status.error == "could not connect: ConnectError: All connection attempts failed"
    assert status.describe().endswith("(retrying with backoff, attempt 1)")

    http_server.start()
    host.wait_until_sync(state("ready"), START_TIMEOUT)
    assert call(registry, "remote__echo", text="up").result == "up"


def test_a_refused_token_names_the_status_and_the_header_to_check(http_server, remote):
    start, _ = remote
    http_server.start("--token", "right")
    host = start(headers={"Authorization": "Bearer wrong"})

    (status,) = host.wait_until_sync(state("failed"), START_TIMEOUT)

    assert status.error == (
        'could not connect: HTTP 401 Unauthorized (WWW-Authenticate: Bearer realm="fixture", '
        'error="invalid_token"): check the Authorization header of MCP server "remote" (its "headers" in mcp.json)'
    )


def test_a_server_that_dies_fails_the_call_with_the_real_cause(http_server, remote, caplog):
    start, registry = remote
    http_server.start()
    host = start()
    host.wait_until_sync(state("ready"), START_TIMEOUT)

    http_server.close()  # the process and its address: connections are refused
    with caplog.at_level(logging.INFO, logger="aptix.admin"):
        result = call(registry, "remote__echo", text="anyone?")

    cause = "lost the connection (ConnectError: All connection attempts failed)"
    assert result.error_message == f'MCP server "remote" {cause}; restarting'
    admin = [record.getMessage() for record in caplog.records if record.name == "aptix.admin"]
    assert f'MCP server "remote" {cause}' in admin
    assert not any("ExceptionGroup" in message for message in admin)
    (status,) = host.wait_until_sync(lambda s: s[0].error and "restart failed" in s[0].error, START_TIMEOUT)
    assert status.error == "restart failed: could not connect: ConnectError: All connection attempts failed"
