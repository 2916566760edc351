"""Benchmark: what the full Agent pipeline costs over a bare loop of the same model calls and tools.

A 10-step Agent run against a zero-latency model endpoint (an in-process OpenAI-compatible server
streaming canned replies through the real `openai` SDK): nine steps call `agent_list_modes`, the
tenth answers. "Full" is `Reasoner.run` (events persisted as TurnEvent rows, broadcast to the
session's group with a subscriber draining it, turn bookkeeping). "Bare" is the same SDK calls
(same system prompt, same tool schemas, same messages) and tool executions in a plain loop. Both
run interleaved in one process; the median of each is printed with the ratio (target ≤ 1.3×).

    DATABASE_URL=... .venv/bin/python bench/agent_overhead.py [--runs 15]
(SQLite in a temp dir when DATABASE_URL is unset.)
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time

from benchenv import setup_django  # bench/benchenv.py: this script runs from bench/

setup_django()

import httpx2
import openai
from asgiref.sync import sync_to_async
from channels.layers import get_channel_layer
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.db import connection

from agents.events import message_events, session_group
from agents.llm import LLMClient
from agents.llm.protocol import (
    PlannedReply,
    PlannedToolCall,
    prompt_token_estimate,
    read_body,
    sse_chunks,
)
from agents.llm.transport import StreamingASGITransport
from agents.run.pipeline import build_system_prompt, select_tools
from agents.run.reasoner import Reasoner
from agents.sessions import session_create
from agents.turns import turn_start
from aptix.logging import admin_logger
from aptix.teams import team_ensure
from modes.catalog import catalog_service, default_mode_key
from modes.models import AgentMode
from tools.base import ToolContext
from tools.builtin.list_modes import AgentListModesTool

STEPS = 10


class ZeroLatencyModel:
    """Answers step 1..9 with a tool call and step 10 with text, keyed on the tool messages seen."""

    async def __call__(self, scope, receive, send):
        request = json.loads(await read_body(receive))
        done = sum(1 for m in request["messages"] if m["role"] == "tool")
        if done < STEPS - 1:
            reply = PlannedReply(
                content="Checking the catalog.",
                tool_calls=[PlannedToolCall("agent_list_modes", "{}", id=f"call_{done}")],
            )
        else:
            reply = PlannedReply(content="All " + "done " * 40)
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/event-stream")]})
        for chunk in sse_chunks(
            reply, model="zero", prompt_tokens=prompt_token_estimate(request["messages"], None), include_usage=True
        ):
            await send({"type": "http.response.body", "body": chunk.encode(), "more_body": True})
        await send({"type": "http.response.body", "body": b"", "more_body": False})


def make_llm() -> LLMClient:
    base = "http://zero.bench/v1"
    client = openai.AsyncOpenAI(
        api_key="x",
        base_url=base,
        max_retries=0,
        http_client=httpx2.AsyncClient(transport=StreamingASGITransport(ZeroLatencyModel()), base_url=base),
    )
    return LLMClient(client, model="zero", label="zero")


async def bare_run(llm: LLMClient, system_prompt: str, schemas, tool, context) -> None:
    messages = [{"role": "system", "content": system_prompt}, {"role": "user", "content": "go"}]
    for _ in range(STEPS):
        reply = await llm.stream_chat(messages=messages, tools=schemas)
        messages.append(
            {
                "role": "assistant",
                "content": reply.content,
                "tool_calls": [
                    {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
                    for c in reply.tool_calls
                ],
            }
            if reply.tool_calls
            else {"role": "assistant", "content": reply.content}
        )
        if not reply.tool_calls:
            return
        for call in reply.tool_calls:
            result = await tool.execute(call.arguments, context)
            messages.append({"role": "tool", "tool_call_id": call.id, "content": result.content_for_model()})


async def main(runs: int) -> None:
    await sync_to_async(call_command)("migrate", verbosity=0)
    user = await sync_to_async(lambda: get_user_model().objects.get_or_create(username="bench")[0])()
    team = await sync_to_async(team_ensure)(name="Bench", owner=user)
    llm = make_llm()
    reasoner = Reasoner(llm=llm, max_steps=STEPS)
    layer = get_channel_layer()
    channel = await layer.new_channel()
    received = messages = 0

    async def drain():
        nonlocal received, messages
        while True:
            received += len(message_events(await layer.receive(channel)))
            messages += 1

    drainer = asyncio.create_task(drain())
    tool = AgentListModesTool(catalog_service, admin_logger)
    # The bare loop sends what the pipeline sends: the same system prompt and tool schemas.
    mode = await AgentMode.objects.aget(key=await sync_to_async(default_mode_key)())
    selection = select_tools(policy=mode.tool_policy, toggles={}, execution="agent")
    system_prompt = build_system_prompt(mode=mode, execution="agent", selection=selection)
    schemas = selection.schemas
    context = ToolContext(session_id="bench", org=team, user=user)

    full, bare = [], []
    for i in range(runs + 2):  # two warm-up rounds
        # A fresh session per run, so the full pipeline sends no more history than the bare loop.
        session = await sync_to_async(session_create)(team=team, user=user, execution="agent")
        await layer.group_add(session_group(session.id), channel)
        turn = await sync_to_async(turn_start)(session=session, text=f"run {i}")
        start = time.perf_counter()
        await reasoner.run(turn.id)
        full_t = time.perf_counter() - start
        start = time.perf_counter()
        await bare_run(llm, system_prompt, schemas, tool, context)
        bare_t = time.perf_counter() - start
        if i >= 2:
            full.append(full_t)
            bare.append(bare_t)
    drainer.cancel()
    f, b = statistics.median(full), statistics.median(bare)
    vendor = connection.vendor
    print(f"agent_overhead: {STEPS}-step Agent run, {runs} runs, database {vendor}")
    print(f"  full pipeline  median {f * 1000:8.1f} ms   (p90 {sorted(full)[int(len(full) * 0.9) - 1] * 1000:.1f} ms)")
    print(f"  bare loop      median {b * 1000:8.1f} ms   (p90 {sorted(bare)[int(len(bare) * 0.9) - 1] * 1000:.1f} ms)")
    print(f"  ratio full/bare       {f / b:8.2f}x   (target <= 1.3x)")
    print(f"  events broadcast      {received} to a subscribed channel, in {messages} group messages")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=15)
    asyncio.run(main(parser.parse_args().runs))
