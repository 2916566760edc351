"""Reasoner fixtures: a scripted model over the real SDK and helpers to run turns."""

from __future__ import annotations

import asyncio
from typing import ClassVar

import pytest
from asgiref.sync import sync_to_async
from channels.layers import get_channel_layer

from agents.events import message_events, session_group
from agents.llm import LLMClient, use_llm_client
from agents.models import Turn
from agents.run.reasoner import Reasoner
from agents.sessions import session_create
from agents.turns import turn_start
from tools.base import InvokeResult, function_schema
from tools.registry import mcp_registry

from .scripted_model import ScriptedModel, openai_client
from .worker_process import redis_layer, worker  # noqa: F401 - fixtures of the worker tests


@pytest.fixture
def model():
    return ScriptedModel()


@pytest.fixture
async def llm(model):
    client = LLMClient(openai_client(model, max_retries=2, timeout=5), model="scripted-model", label="scripted")
    with use_llm_client(client):
        yield client
    await client.client.close()


@pytest.fixture
def make_session(team_a, alice):
    async def make(**kwargs):
        kwargs.setdefault("team", team_a)
        kwargs.setdefault("user", alice)
        return await sync_to_async(session_create)(**kwargs)

    return make


@pytest.fixture
def run_turn(llm):
    """Start a turn in `session` and run it to its end with a Reasoner on the scripted model."""

    async def run(session, text="Hello", execution=None, reasoner=None, choice=None, **kwargs) -> Turn:
        turn = await sync_to_async(turn_start)(session=session, text=text, execution=execution, choice=choice)
        await (reasoner or Reasoner(llm=llm)).run(turn.id, **kwargs)
        return await Turn.objects.select_related("session").aget(pk=turn.id)

    return run


async def event_types(turn) -> list[str]:
    return [e.type async for e in turn.events.order_by("seq")]


async def events_of(turn, event_type) -> list[dict]:
    return [e.payload async for e in turn.events.filter(type=event_type).order_by("seq")]


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
