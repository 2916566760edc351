"""The MCP host against stdio servers that misbehave (odd_server.py, the fixture server frozen with
SIGSTOP): a broken tool definition, names that collide or are too long, results bigger than the
limit or merely big, and a server that stops answering."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import time
from pathlib import Path

import pytest

from tests.helpers.mcp import START_TIMEOUT, all_settled, fixture_entry, gone, write_config
from tools.mcp.host import McpHost
from tools.registry import ToolRegistry

from .odd_server import LONG_NAME

pytestmark = pytest.mark.slow  # real subprocesses (servers, workers, web processes)

ODD_SERVER = Path(__file__).with_name("odd_server.py")


@pytest.fixture(scope="module")
def odd(tmp_path_factory):
    registry = ToolRegistry("mcp")
    config = write_config(
        tmp_path_factory.mktemp("mcp") / "mcp.json",
        {"odd": {"command": "python", "args": [str(ODD_SERVER)], "timeout": 30}},  # the default 16 MiB limit
    )
    host = McpHost(config, registry=registry)
    host.start()
    host.wait_until_sync(all_settled, START_TIMEOUT)
    yield host, registry
    host.stop()


def call(registry: ToolRegistry, tool: str, /, **arguments):
    return asyncio.run(registry.get(tool).execute(json.dumps(arguments), None))


def test_a_tool_with_a_broken_schema_is_left_out_and_the_others_are_served(odd):
    host, registry = odd
    (status,) = host.status()

    assert (status.state, status.restarts) == ("ready", 0)
    assert ("no_type", "invalid definition: inputSchema.type: Field required") in status.dropped
    assert "odd__no_type" not in registry
    assert call(registry, "odd__echo", text="still served").result == "still served"


def test_tools_that_cannot_be_offered_are_reported_not_dropped_silently(odd):
    host, registry = odd
    (status,) = host.status()

    assert status.tools == ("odd__echo", "odd__big", "odd__dotted_name")
    assert status.describe() == "ready with 3 tools, 3 dropped"
    assert dict(status.dropped) == {
        "no_type": "invalid definition: inputSchema.type: Field required",
        "dotted_name": 'its name collides with "dotted.name" (both become odd__dotted_name)',
        LONG_NAME: "its name would be longer than 64 characters as odd__…",
    }
    assert status.tool_rows() == [("odd__echo", ""), ("odd__big", ""), ("odd__dotted_name", "dotted.name")]
    assert call(registry, "odd__dotted_name").result == "dotted.name"  # the server's own name is called


def test_a_result_over_the_size_limit_is_a_clear_tool_error_and_the_session_carries_on(odd):
    host, registry = odd
    pid = host.status()[0].pid

    result = call(registry, "odd__big", megabytes=9)  # 18 MiB: the text and its structured copy

    assert result.error_message == (
        'MCP tool "odd__big" failed: the answer is 18 MiB, over the 16 MiB limit of MCP server "odd" '
        '(raise "max_message_mb" in its mcp.json entry to accept it)'
    )
    assert call(registry, "odd__echo", text="next").result == "next"
    assert host.status()[0].pid == pid


def test_a_large_result_is_read_in_linear_time(odd):
    host, registry = odd
    loop = host._started_loop()

    async def thread_time() -> float:
        return time.thread_time()

    before = asyncio.run_coroutine_threadsafe(thread_time(), loop).result()
    result = call(registry, "odd__big", megabytes=5)  # a 10 MiB message
    cpu = asyncio.run_coroutine_threadsafe(thread_time(), loop).result() - before

    assert len(result.result) == 5 * 1024 * 1024
    assert cpu < 2.5  # reading it quadratically took ~6 s of the host thread's CPU here


def test_a_frozen_server_is_found_by_its_missed_ping_and_restarted(tmp_path):
    registry = ToolRegistry("mcp")
    config = write_config(
        tmp_path / "mcp.json", {"fixture": fixture_entry(timeout=1, initTimeout=60, ping_interval=0.2)}
    )
    host = McpHost(config, registry=registry)
    host.start()
    frozen = None
    try:
        (status,) = host.wait_until_sync(all_settled, START_TIMEOUT)
        frozen = status.pid
        os.kill(frozen, signal.SIGSTOP)

        (status,) = host.wait_until_sync(lambda s: s[0].state == "restarting", 10)
        assert status.error == "did not answer a ping within 1 s"
        (status,) = host.wait_until_sync(lambda s: s[0].state == "ready", START_TIMEOUT)
        assert status.restarts == 1 and status.pid != frozen
        assert gone(frozen, 0)
        assert call(registry, "fixture__echo", text="thawed").result == "thawed"
    finally:
        host.stop()
        if frozen is not None and not gone(frozen, 0):
            os.kill(frozen, signal.SIGKILL)
