"""The context budget (agents/run/context.py): earlier turns fill what the system prompt, the tools,
the current message and the current turn's steps leave, newest first and whole, with their tool calls
and results; what was sent and dropped is in the trace; a turn that cannot fit fails clearly."""

from __future__ import annotations

import asyncio
import threading

from asgiref.sync import sync_to_async

from agents.models import Turn
from agents.run.context import ERROR_TOO_LONG, TokenCounter, context_budget, load_history
from agents.turns import turn_start
from modes.models import AgentMode
from tests.helpers import inline_db
from tests.helpers.events import events_of

pytestmark = inline_db


@sync_to_async
def past_turns(session, count: int, answer_chars: int) -> None:
    Turn.objects.bulk_create(
        Turn(
            session=session,
            index=i,
            user_message=f"question {i}",
            answer=f"answer {i} " + "lorem ipsum dolor sit amet " * (answer_chars // 27),
            mode=session.mode,
            status=Turn.Status.COMPLETED,
        )
        for i in range(1, count + 1)
    )


async def test_a_200_turn_session_stays_under_the_budget_newest_turns_first(make_session, run_turn, model, settings):
    settings.APTIX_CONTEXT_TOKENS = 32_000
    session = await make_session()
    await past_turns(session, 200, answer_chars=1_500)  # ~300 tokens a turn: 60,000 in all
    model.reply("ok")
    turn = await run_turn(session, "And now?")

    request = model.requests[0]
    counter = TokenCounter("scripted-model")
    assert counter.messages(request["messages"]) + counter.tools(request.get("tools") or []) <= context_budget()
    users = [m["content"] for m in request["messages"] if m["role"] == "user"]
    assert users[-1] == "And now?" and users[-2] == "question 200"  # the newest earlier turn is there
    assert "question 1" not in users  # the oldest went first
    [started] = await events_of(turn, "turn.started")
    history = started["history"]
    assert history["turns_sent"] + history["turns_dropped"] == 200 and history["turns_dropped"] > 0
    assert history["turns_sent"] == len(users) - 1
    [step] = await events_of(turn, "step.started")
    assert step["tokens"] <= context_budget() and step["history_turns"] == history["turns_sent"]


async def test_a_follow_up_sees_the_previous_turns_tool_result(make_session, run_turn, model, mcp_sql_tool):
    await AgentMode.objects.filter(key="general").aupdate(tool_policy=["*"])
    session = await make_session(execution="agent")
    first = model.reply("", tool_calls=[("sql__query", {"sql": "select month, revenue from sales"})])
    model.reply("Revenue was 10 in January.")
    await run_turn(session, "Revenue by month?")
    model.reply("By product: …")
    await run_turn(session, "Now by product")

    messages = model.last_messages
    call = next(m for m in messages if m["role"] == "assistant" and m.get("tool_calls"))
    assert call["tool_calls"][0]["id"] == first.tool_calls[0].id
    assert call["tool_calls"][0]["function"]["arguments"] == '{"sql": "select month, revenue from sales"}'
    result = next(m for m in messages if m["role"] == "tool")
    assert result["tool_call_id"] == first.tool_calls[0].id and "2026-01 | 10" in result["content"]
    assert [m["role"] for m in messages[1:]] == ["user", "assistant", "tool", "assistant", "user"]


async def test_the_current_turn_is_never_cut_and_a_turn_that_cannot_fit_fails_clearly(
    make_session, run_turn, model, settings
):
    settings.APTIX_CONTEXT_TOKENS = 2_000
    session = await make_session()
    await past_turns(session, 3, answer_chars=200)
    huge = "word " * 5_000  # far more than the whole context
    turn = await run_turn(session, huge)
    assert turn.status == "failed" and model.calls == 0
    assert turn.error.startswith(ERROR_TOO_LONG.split("(")[0])
    assert "Start a new session" in turn.error


async def test_history_gives_way_when_the_current_turn_grows(make_session, run_turn, model, mcp_sql_tool, settings):
    """The current turn's tool steps always go; earlier turns drop, oldest first, to make room."""
    settings.APTIX_CONTEXT_TOKENS = 8_000  # 6,000 for the request
    settings.APTIX_TOOL_RESULT_CHARS = 4_000
    await AgentMode.objects.filter(key="general").aupdate(tool_policy=["*"])
    session = await make_session(execution="agent")
    await past_turns(session, 10, answer_chars=1_500)  # ~450 tokens each: all fit at the start
    mcp_sql_tool.result = "| n |\n|---|\n" + "| 12345 |\n" * 300  # ~3,000 characters a call
    model.reply("", tool_calls=[("sql__query", {"sql": "select 1"})])
    model.reply("", tool_calls=[("sql__query", {"sql": "select 2"})])
    model.reply("Done.")
    turn = await run_turn(session, "Two big queries")
    assert turn.status == "completed"
    first, last = model.requests[0]["messages"], model.requests[-1]["messages"]
    assert sum(m["role"] == "user" for m in last) < sum(m["role"] == "user" for m in first)
    assert [m["role"] for m in last[-5:]] == ["user", "assistant", "tool", "assistant", "tool"]
    steps = await events_of(turn, "step.started")
    assert steps[-1]["history_turns"] < steps[0]["history_turns"]
    assert all(step["tokens"] <= context_budget() for step in steps)


async def test_a_sessions_first_turn_does_not_wait_for_the_sync_thread_for_its_history(make_session):
    """Twenty turns starting at once each queued a history read on asgiref's one sync
    thread, behind every other turn's reads, even those of a new session, which has no history."""
    session = await make_session()
    first = await sync_to_async(turn_start)(session=session, text="Hi")
    holding, release = threading.Event(), threading.Event()
    held = asyncio.ensure_future(sync_to_async(lambda: (holding.set(), release.wait(10)))())
    await asyncio.to_thread(holding.wait, 10)
    try:  # the sync thread is busy: a read queued there would wait for `release`
        history = await asyncio.wait_for(load_history(first, TokenCounter("gpt-4o"), 10_000), 5)
    finally:
        release.set()
        await held
    assert (history.messages, history.sizes, history.dropped, history.tokens) == ([], [], 0, 0)
