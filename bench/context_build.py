"""Benchmark: building a turn's request in a long session under the context budget.

A session of 500 finished turns, each with one tool step (the assistant's call and a 2,000-character
result) and a 600-character answer. For a new turn, the request is built as the reasoner builds it
(agents/run/context.py: earlier turns newest first until APTIX_CONTEXT_TOKENS is full, each with its
calls and budget-cut results). Printed: the median build time over the runs, the request's size in
bytes and tokens, and how many earlier turns went in and stayed out.

    DATABASE_URL=... .venv/bin/python bench/context_build.py [--runs 20] [--turns 500]
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

from asgiref.sync import sync_to_async
from django.contrib.auth import get_user_model
from django.core.management import call_command

from agents.models import Turn, TurnEvent
from agents.run.context import TokenCounter, context_budget, load_history
from agents.run.pipeline import build_system_prompt, select_tools
from agents.sessions import session_create
from agents.turns import turn_start
from aptix.teams import team_ensure
from modes.models import AgentMode

MODEL = "gpt-4o-mini"  # an OpenAI name: counted with the real tokenizer


def build_session(turns: int):
    call_command("migrate", verbosity=0)
    user, _ = get_user_model().objects.get_or_create(username="bench-context")
    team = team_ensure(name="Bench context", owner=user)
    session = session_create(team=team, user=user, execution="agent")
    rows = Turn.objects.bulk_create(
        Turn(
            session=session,
            index=i,
            user_message=f"Question {i}: how did revenue change in month {i}?",
            answer=f"Answer {i}. " + "Revenue rose in the north and fell in the south. " * 12,
            mode=session.mode,
            execution="agent",
            status=Turn.Status.COMPLETED,
        )
        for i in range(1, turns + 1)
    )
    events = []
    for turn in rows:
        call = {"id": f"call_{turn.index}", "name": "sql__query", "arguments": '{"sql": "select * from sales"}'}
        events.append(TurnEvent(turn=turn, seq=1, type="model.message", payload={"content": "", "tool_calls": [call]}))
        result = "| month | region | revenue |\n|---|---|---|\n" + "| 2026-01 | north | 12345.67 |\n" * 70
        events.append(
            TurnEvent(turn=turn, seq=2, type="tool.result", payload={"id": call["id"], "ok": True, "result": result})
        )
    TurnEvent.objects.bulk_create(events)
    return session


async def build_request(session, counter: TokenCounter) -> tuple[list[dict], list[dict], object]:
    turn = await sync_to_async(Turn.objects.filter(session=session).order_by("-index").first)()
    mode = await AgentMode.objects.aget(key=session.mode)
    selection = select_tools(policy=mode.tool_policy, toggles={}, execution="agent")
    system = {"role": "system", "content": build_system_prompt(mode=mode, execution="agent", selection=selection)}
    current = {"role": "user", "content": "And what about next month?"}
    fixed = counter.tools(selection.schemas) + counter.messages([system, current])
    history = await load_history(turn, counter, max(context_budget() - fixed, 0))
    return [system, *history.messages, current], selection.schemas, history


async def main(runs: int, turns: int) -> None:
    session = await sync_to_async(build_session)(turns)
    await sync_to_async(turn_start)(session=session, text="And what about next month?")
    counter = TokenCounter(MODEL)
    timings = []
    for _ in range(runs):
        started = time.perf_counter()
        messages, schemas, history = await build_request(session, counter)
        timings.append((time.perf_counter() - started) * 1000)
    body = json.dumps({"model": MODEL, "messages": messages, "tools": schemas})
    tokens = counter.messages(messages) + counter.tools(schemas)
    print(f"context_build: a new turn in a {turns}-turn session, {runs} runs, budget {context_budget():,} tokens")
    median, p90 = statistics.median(timings), sorted(timings)[int(runs * 0.9) - 1]
    how = "exact" if counter.exact else "estimated"
    print(f"  build time       median {median:7.1f} ms   (p90 {p90:.1f} ms)")
    print(f"  request          {len(body.encode()):,} bytes, {tokens:,} tokens ({how})")
    print(f"  earlier turns    {len(history.sizes)} sent, {history.dropped} left out")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--turns", type=int, default=500)
    args = parser.parse_args()
    asyncio.run(main(args.runs, args.turns))
