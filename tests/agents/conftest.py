"""Fixtures of the agents tests: the reasoner's (tests/helpers/reasoner.py), the worker's
(tests/helpers/worker_process.py), a stand-in MCP tool and a listener on a session's group."""

from __future__ import annotations

import asyncio
from typing import ClassVar

import pytest
from channels.layers import get_channel_layer

from agents.events import message_events, session_group
from tests.helpers.offline import offline  # noqa: F401 - the offline model's fixture
from tests.helpers.reasoner import llm, make_session, model, run_turn  # noqa: F401 - fixtures of the turn tests
from tests.helpers.worker_process import redis_layer, worker  # noqa: F401 - fixtures of the worker tests
from tools.base import InvokeResult, function_schema
from tools.registry import mcp_registry


class StandInMcpTool:
    """A stand-in for an MCP server's tool in the MCP registry (real servers arrive with the MCP
    host); it records its calls."""

    TOOL_USAGE_METADATA = "Run a read-only SQL query."
    is_tool_fully_executed_on_server = True
    TOOL_NAME = "sql__query"
    read_only = True  # annotated readOnlyHint, as our SQL server's tools are: runs without approval
    calls: ClassVar[list] = []

    @staticmethod
    def get_schema():
        return function_schema("sql__query", "Run SQL.", {"sql": {"type": "string"}}, required=["sql"])

    result = "| month | revenue |\n|---|---|\n| 2026-01 | 10 |"

    async def execute(self, arguments_json, context):
        type(self).calls.append(arguments_json)
        return InvokeResult.create(self.result)


@pytest.fixture
def mcp_sql_tool():
    StandInMcpTool.calls = []
    tool = StandInMcpTool()
    mcp_registry.register(tool)
    yield tool
    mcp_registry.unregister("sql__query")


@pytest.fixture
async def listener():
    """Subscribe to a session's group and collect what is broadcast."""
    layer = get_channel_layer()
    subscriptions = []

    async def subscribe(session_id):
        channel = await layer.new_channel()
        await layer.group_add(session_group(session_id), channel)
        subscriptions.append((session_group(session_id), channel))

        async def drain():
            """Every event broadcast so far, one dict each (group messages carry batches)."""
            events = []
            while True:
                try:
                    message = await asyncio.wait_for(layer.receive(channel), timeout=0.05)
                except TimeoutError:  # nothing more queued
                    return events
                assert message["type"] == "turn.events" and message["session_id"] == session_id
                events += message_events(message)

        return drain

    yield subscribe
    for group, channel in subscriptions:
        await layer.group_discard(group, channel)
