"""`timeout` bounds the start-up handshake as well as each call, and `initTimeout` sets the
handshake's bound alone: a server that never answers initialize (silent_server.py) fails after
that many seconds, not after a fixed minute."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.helpers.mcp import all_settled, by_name, fixture_entry, write_config
from tools.mcp.host import McpHost
from tools.registry import ToolRegistry

pytestmark = pytest.mark.slow  # real subprocesses (servers, workers, web processes)

SILENT = Path(__file__).with_name("silent_server.py")
HANDSHAKE = "did not complete the MCP handshake (initialize) within {} s"


def silent(**extra) -> dict:
    return {"command": sys.executable, "args": [str(SILENT)], **extra}


def test_a_server_that_never_answers_initialize_fails_after_its_timeout(tmp_path):
    config = write_config(
        tmp_path / "mcp.json",
        {
            "short": silent(timeout=1),
            "split": silent(timeout=60, initTimeout=1.5),
            "patient": fixture_entry(timeout=0.5, initTimeout=60),  # slow to import, quick to call
        },
    )
    host = McpHost(config, registry=ToolRegistry("mcp"))
    host.start()
    try:
        statuses = by_name(host.wait_until_sync(all_settled, 20))  # well before the old fixed 60 s
    finally:
        host.stop()

    assert (statuses["short"].state, statuses["short"].error) == ("failed", HANDSHAKE.format(1))
    assert (statuses["split"].state, statuses["split"].error) == ("failed", HANDSHAKE.format(1.5))
    assert statuses["short"].pid is None and statuses["split"].pid is None
    assert statuses["patient"].state == "ready"
