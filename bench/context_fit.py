"""Benchmark: tools and results that fit a small model's context.

With 300 read-only MCP tools allowed (policy `*`) and an 8,192-token model, prints the share of the
context the first request's tool schemas take (target: at most 35%; tool_search carries the rest),
the same with only a few tools (nothing to search), then a turn whose tool answers with 5 MB of text
at 8,192 and 16,000 tokens (it must complete, the result cut to what fits), and the offline model
answering "how many orders are there?" through tool_search → sql__query (a stand-in SQL tool).

    .venv/bin/python bench/context_fit.py
"""

from __future__ import annotations

import asyncio
import json
import time

from benchenv import setup_django  # bench/benchenv.py: this script runs from bench/

setup_django(DEBUG="false")

import httpx2
import openai
from asgiref.sync import sync_to_async
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management import call_command

from agents.llm import LLMClient
from agents.llm.offline.app import OfflineModelApp
from agents.llm.protocol import PlannedReply, PlannedToolCall, prompt_token_estimate, read_body, sse_chunks
from agents.llm.transport import StreamingASGITransport
from agents.models import TurnEvent
from agents.run.context import TokenCounter
from agents.run.reasoner import Reasoner
from agents.sessions import session_create
from agents.turns import turn_start
from aptix.teams import team_ensure
from modes.models import AgentMode
from tools.base import InvokeResult, function_schema
from tools.registry import mcp_registry

TOPICS = ("invoice", "shipment", "ticket", "calendar", "weather", "repository", "wiki", "payroll", "crm", "alert")


class StandInTool:
    """A read-only MCP tool with a realistic schema (about 60 tokens)."""

    TOOL_USAGE_METADATA = "A stand-in."
    is_tool_fully_executed_on_server = True
    read_only = True
    annotations = None

    def __init__(self, name: str, description: str, result: str = "ok") -> None:
        self.TOOL_NAME = name
        self.description = description
        self.result = result

    def get_schema(self):
        return function_schema(
            self.TOOL_NAME,
            self.description,
            {
                "id": {"type": "string", "description": "the record's id"},
                "since": {"type": "string", "description": "ISO date: records from this day on"},
                "sql": {"type": "string", "description": "a read-only SQL query"},
            },
        )

    async def execute(self, arguments_json, context):
        return InvokeResult.create(self.result)


class RecordingModel:
    """Answers from a script of replies and keeps every request body."""

    def __init__(self) -> None:
        self.script: list[PlannedReply] = []
        self.requests: list[dict] = []

    async def __call__(self, scope, receive, send):
        request = json.loads(await read_body(receive))
        self.requests.append(request)
        reply = self.script.pop(0) if self.script else PlannedReply(content="Done.")
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/event-stream")]})
        estimate = prompt_token_estimate(request["messages"], request.get("tools"))
        for chunk in sse_chunks(reply, model="bench", prompt_tokens=estimate, include_usage=True):
            await send({"type": "http.response.body", "body": chunk.encode(), "more_body": True})
        await send({"type": "http.response.body", "body": b"", "more_body": False})


def client(app, context_tokens: int, name: str = "bench") -> LLMClient:
    base = "http://model.bench/v1"
    sdk = openai.AsyncOpenAI(
        api_key="x",
        base_url=base,
        max_retries=0,
        http_client=httpx2.AsyncClient(transport=StreamingASGITransport(app), base_url=base),
    )
    return LLMClient(sdk, model=name, label=name, context_tokens=context_tokens)


async def run(llm: LLMClient, team, user, text: str):
    session = await sync_to_async(session_create)(team=team, user=user, execution="agent")
    turn = await sync_to_async(turn_start)(session=session, text=text, execution="agent")
    started = time.perf_counter()
    await Reasoner(llm=llm).run(turn.id)
    await turn.arefresh_from_db()
    return turn, time.perf_counter() - started


async def first_request_share(team, user, tools: int, context: int) -> None:
    model = RecordingModel()
    turn, _ = await run(client(model, context), team, user, "hello")
    schemas = model.requests[0].get("tools") or []
    tokens = TokenCounter("bench").tools(schemas)
    search = "with tool_search" if any(s["function"]["name"] == "tool_search" for s in schemas) else "no tool_search"
    print(
        f"  {tools:3d} tools, {context:,}-token model: first request {len(schemas)} schemas, {tokens:,} tokens = "
        f"{tokens / context:.1%} of the context ({search}); turn {turn.status}"
    )


async def huge_result(team, user, context: int) -> None:
    model = RecordingModel()
    model.script = [
        PlannedReply(content="", tool_calls=[PlannedToolCall("tool_search", '{"query": "dump table"}', id="call_1")]),
        PlannedReply(content="", tool_calls=[PlannedToolCall("db__dump", "{}", id="call_2")]),
    ]
    turn, seconds = await run(client(model, context), team, user, "dump it")
    result = await TurnEvent.objects.filter(turn=turn, type="tool.result", payload__name="db__dump").afirst()
    if result is None or "cut_for_model" not in result.payload:
        print(
            f"  5 MB result, {context:,}-token model: turn {turn.status}: {turn.error or (result and result.payload)}"
        )
        return
    cut = result.payload["cut_for_model"]
    print(
        f"  5 MB result, {context:,}-token model: turn {turn.status} in {seconds:.2f} s; the model got {cut:,} "
        f"characters of 5,000,000 (APTIX_TOOL_RESULT_CHARS {settings.APTIX_TOOL_RESULT_CHARS:,})"
    )


async def offline_orders(team, user, context: int) -> None:
    turn, _ = await run(client(OfflineModelApp(), context, "offline"), team, user, "how many orders are there?")
    calls = [e.payload["name"] async for e in TurnEvent.objects.filter(turn=turn, type="tool.called").order_by("seq")]
    print(f"  offline model, 'how many orders are there?': {' → '.join(calls)}; turn {turn.status}")
    print(f"    answer: {turn.answer.splitlines()[0] if turn.answer else turn.error}")


async def main() -> None:
    await sync_to_async(call_command)("migrate", verbosity=0)
    user = await sync_to_async(lambda: get_user_model().objects.get_or_create(username="bench")[0])()
    team = await sync_to_async(team_ensure)(name="Bench", owner=user)
    await AgentMode.objects.filter(key="general").aupdate(tool_policy=["*"])
    print("context_fit: tool schemas and tool results against the model's context")
    few = [StandInTool(f"{TOPICS[i]}__op_{i:03d}", f"Looks up {TOPICS[i]} records.") for i in range(5)]
    for tool in few:
        mcp_registry.register(tool)
    await first_request_share(team, user, len(few), 8_192)
    many = [
        StandInTool(f"{TOPICS[i % 10]}__op_{i:03d}", f"Looks up {TOPICS[i % 10]} records by id or date (variant {i}).")
        for i in range(5, 300)
    ]
    for tool in many:
        mcp_registry.register(tool)
    await first_request_share(team, user, 300, 8_192)
    mcp_registry.register(StandInTool("db__dump", "Dumps the whole table.", "row,value\n" * 500_000))
    for context in (8_192, 16_000):
        await huge_result(team, user, context)
    mcp_registry.register(StandInTool("sql__query", "Run a read-only SQL query.", "| orders |\n|---|\n| 240 |"))
    await offline_orders(team, user, 8_192)


if __name__ == "__main__":
    asyncio.run(main())
