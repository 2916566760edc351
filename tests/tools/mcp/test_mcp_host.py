"""The MCP host with real server processes: the fixture server (mcp_fixture_server.py) and
mcp-server-time, started in parallel; calls from other event loops, timeouts, crashes and
restarts, tools/list_changed, environment expansion, streamable HTTP and a clean shutdown."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time

import pytest
import uvicorn
from django.conf import settings

from tests.helpers.mcp import FIXTURE, START_TIMEOUT, all_settled, by_name, fixture_entry, gone, write_config
from tools.mcp.host import McpHost
from tools.mcp.transport import SETPRIV
from tools.registry import ToolRegistry, mcp_registry, validate_tool_contract

from .mcp_fixture_server import server as fixture_server

pytestmark = pytest.mark.slow  # real subprocesses (servers, workers, web processes)

SECRET = "s3cret-from-the-environment"


@pytest.fixture(scope="module")
def host(tmp_path_factory):
    config = write_config(
        tmp_path_factory.mktemp("mcp") / "mcp.json",
        {
            "fixture": fixture_entry(env={"FIXTURE_SECRET": "${APTIX_TEST_MCP_SECRET}"}, timeout=1, initTimeout=60),
            "time": {"command": "mcp-server-time"},
            "broken": {"command": "python", "args": "not-a-list"},
            "crashy": {"command": "python", "args": ["-c", "import sys; sys.exit('crashy: cannot open the database')"]},
            "off": {"command": "mcp-server-time", "disabled": True},
        },
    )
    with pytest.MonkeyPatch.context() as env:
        env.setenv("APTIX_TEST_MCP_SECRET", SECRET)
        mcp_host = McpHost(config)  # the process-wide registry: what the reasoner resolves tools from
        mcp_host.start()
    mcp_host.wait_until_sync(all_settled, START_TIMEOUT)
    yield mcp_host
    mcp_host.stop()


async def fixture_ready(host):
    statuses = await host.wait_until(lambda s: by_name(s)["fixture"].state == "ready", START_TIMEOUT)
    return by_name(statuses)["fixture"]


async def call(tool: str, /, **arguments):
    return await mcp_registry.get(tool).execute(json.dumps(arguments), None)


def test_enabled_servers_start_and_a_broken_entry_fails_alone(host):
    status = by_name(host.status())

    assert status["fixture"].state == "ready"
    assert {"fixture__echo", "fixture__sleep", "fixture__crash"} <= set(status["fixture"].tools)
    assert status["time"].state == "ready"
    assert status["time"].tools == ("time__get_current_time", "time__convert_time")
    assert status["broken"].state == "failed"
    assert status["broken"].error == 'invalid config: "args" must be a list of strings'
    assert status["crashy"].state == "failed"
    assert status["crashy"].error == "exited during start-up (exit code 1): crashy: cannot open the database"
    assert status["off"].state == "disabled"
    assert status["fixture"].pid != status["time"].pid
    assert not gone(status["fixture"].pid, 0) and not gone(status["time"].pid, 0)


def test_registry_entries_follow_the_tool_contract(host):
    entry = mcp_registry.get("fixture__echo")

    assert validate_tool_contract(entry) == "fixture__echo"
    function = entry.get_schema()["function"]
    assert function["description"] == "Return the text unchanged."
    assert function["parameters"]["type"] == "object"
    assert function["parameters"]["required"] == ["text"]
    assert entry.read_only is True
    assert entry.TOOL_USAGE_METADATA == 'Return the text unchanged (read-only, MCP server "fixture").'


def test_calls_work_from_any_event_loop(host):
    entry = mcp_registry.get("fixture__echo")
    results = [asyncio.run(entry.execute(json.dumps({"text": f"loop {i}"}), None)) for i in range(2)]
    in_thread = []
    worker = threading.Thread(target=lambda: in_thread.append(asyncio.run(entry.execute('{"text": "thread"}', None))))
    worker.start()
    worker.join()

    assert [r.result for r in results + in_thread] == ["loop 0", "loop 1", "thread"]


async def test_the_time_server_answers(host):
    result = await call("time__get_current_time", timezone="Europe/Paris")

    assert result.successful
    assert json.loads(result.result)["timezone"] == "Europe/Paris"


async def test_env_references_reach_the_child_and_nothing_else_does(host):
    assert (await call("fixture__env", name="FIXTURE_SECRET")).result == SECRET
    assert (await call("fixture__env", name="APTIX_TEST_MCP_SECRET")).result == ""


async def test_tool_side_errors_and_bad_arguments_are_tool_errors(host):
    failed = await call("fixture__fail")
    bad_json = await mcp_registry.get("fixture__echo").execute("{not json", None)

    assert not failed.successful and "fail" in failed.error_message
    assert bad_json.error_message.startswith('The arguments for MCP tool "fixture__echo" are not valid JSON')


async def test_a_call_is_stopped_at_the_timeout_and_the_session_stays_usable(host):
    pid = (await fixture_ready(host)).pid
    started = time.monotonic()
    result = await call("fixture__sleep", seconds=10)
    elapsed = time.monotonic() - started

    assert result.error_message == 'MCP tool "fixture__sleep" timed out after 1 s'
    assert elapsed < 3
    assert (await call("fixture__echo", text="still here")).result == "still here"
    assert by_name(host.status())["fixture"].pid == pid


async def test_cancelling_the_caller_cancels_the_call_and_the_session_stays_usable(host, tmp_path):
    await fixture_ready(host)
    started_fifo = tmp_path / "started"
    os.mkfifo(started_fifo)
    in_flight = asyncio.create_task(call("fixture__sleep", seconds=30, started_fifo=str(started_fifo)))
    await asyncio.wait_for(asyncio.to_thread(started_fifo.read_text), 10)

    in_flight.cancel()

    with pytest.raises(asyncio.CancelledError):
        await in_flight
    assert (await call("fixture__echo", text="next")).result == "next"


async def test_tools_list_changed_refreshes_the_registry(host):
    await fixture_ready(host)
    assert (await call("fixture__add_tool", name="late")).result == "added"

    await host.wait_until(lambda s: "fixture__late" in by_name(s)["fixture"].tools, 10)
    assert (await call("fixture__late")).result == "late was added at runtime"


async def test_a_server_killed_mid_call_fails_the_call_clearly_and_is_restarted(host, tmp_path):
    before = await fixture_ready(host)
    started_fifo = tmp_path / "started"
    os.mkfifo(started_fifo)
    in_flight = asyncio.create_task(call("fixture__sleep", seconds=30, started_fifo=str(started_fifo)))
    await asyncio.wait_for(asyncio.to_thread(started_fifo.read_text), 10)  # the server is in the call

    os.kill(before.pid, signal.SIGKILL)
    result = await asyncio.wait_for(in_flight, 10)

    assert result.error_message == 'MCP server "fixture" stopped unexpectedly (exit code -9); restarting'
    assert by_name(host.status())["fixture"].state == "restarting"
    # Kept while down: a call now waits for the restart within its call timeout. Whether this one would
    # see the server back depends on how fast it restarts, so test_mcp_restart_wait.py gates the start.
    assert "fixture__echo" in mcp_registry

    after = await fixture_ready(host)
    assert after.restarts == before.restarts + 1 and after.pid != before.pid
    assert (await call("fixture__echo", text="back")).result == "back"


async def test_a_server_that_exits_by_itself_is_restarted(host):
    before = await fixture_ready(host)

    result = await call("fixture__crash")

    assert result.error_message == 'MCP server "fixture" stopped unexpectedly (exit code 3); restarting'
    after = await fixture_ready(host)
    assert after.restarts == before.restarts + 1
    assert (await call("fixture__noop")).successful


def test_stop_ends_every_child_and_withdraws_the_tools(tmp_path):
    registry = ToolRegistry("mcp")
    config = write_config(tmp_path / "mcp.json", {"fixture": fixture_entry(), "time": {"command": "mcp-server-time"}})
    host = McpHost(config, registry=registry)
    host.start()
    pids = [s.pid for s in host.wait_until_sync(all_settled, START_TIMEOUT)]
    assert len(registry) > 0 and all(pids)

    host.stop()

    assert all(gone(pid, 0) for pid in pids)
    assert len(registry) == 0
    assert {s.state for s in host.status()} == {"stopped"}


@pytest.mark.skipif(SETPRIV is None, reason="needs Linux and setpriv")
def test_children_do_not_outlive_a_killed_web_process(tmp_path):
    # A stdio server exits when its stdin closes with the dead parent; this shell would then linger
    # in `sleep`, so only the kernel's parent-death signal can end it.
    config = write_config(
        tmp_path / "mcp.json", {"fixture": {"command": "sh", "args": ["-c", f"{sys.executable} {FIXTURE}; sleep 1000"]}}
    )
    script = (
        "import sys; sys.path.insert(0, sys.argv[1])\n"
        "from tools.mcp.host import McpHost\nfrom tools.registry import ToolRegistry\n"
        "host = McpHost(sys.argv[2], registry=ToolRegistry('mcp')); host.start()\n"
        "print(host.wait_until_sync(lambda s: all(x.settled for x in s), 60)[0].pid, flush=True)\n"
        "sys.stdin.read()\n"
    )
    with subprocess.Popen(
        [sys.executable, "-c", script, str(settings.BASE_DIR), str(config)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    ) as parent:
        child_pid = int(parent.stdout.readline())

        parent.kill()  # no atexit hooks, no clean-up: only the kernel can stop the child now

    assert gone(child_pid, 10)


def test_an_http_server_is_reached_with_headers_from_the_environment(tmp_path, monkeypatch):
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()  # accepting before the host connects (queued until uvicorn runs): no waiting
    port = listener.getsockname()[1]
    http_server = uvicorn.Server(uvicorn.Config(fixture_server.streamable_http_app(), log_level="warning"))
    thread = threading.Thread(target=http_server.run, kwargs={"sockets": [listener]}, daemon=True)
    thread.start()
    monkeypatch.setenv("APTIX_TEST_MCP_TOKEN", "tok-123")
    registry = ToolRegistry("mcp")
    host = McpHost(
        write_config(
            tmp_path / "mcp.json",
            {"remote": {"url": f"http://127.0.0.1:{port}/mcp", "headers": {"X-Test-Token": "${APTIX_TEST_MCP_TOKEN}"}}},
        ),
        registry=registry,
    )
    host.start()
    try:
        (status,) = host.wait_until_sync(all_settled, START_TIMEOUT)
        assert (status.type, status.state) == ("http", "ready")
        result = asyncio.run(registry.get("remote__header").execute('{"name": "x-test-token"}', None))
        assert result.result == "tok-123"
    finally:
        host.stop()
        http_server.should_exit = True
        thread.join(10)
