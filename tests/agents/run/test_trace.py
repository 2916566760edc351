"""The trace stored once per turn (agents/run/trace.py): Turn.trace holds the system
prompt, the tool schemas and the earlier turns by reference; each step's step.started event only the
messages it added. An auditor still reads exactly what the model was sent at every step."""

from __future__ import annotations

import json

from asgiref.sync import sync_to_async
from django.urls import reverse

from agents.models import Turn, TurnEvent
from agents.run.trace import turn_trace
from modes.models import AgentMode
from tests.helpers import inline_db
from tests.helpers.events import events_of

pytestmark = inline_db


def sent(model) -> list[tuple[list[dict], list[dict]]]:
    """What the scripted model received: each request's messages and tool schemas."""
    return [(r["messages"], r.get("tools") or []) for r in model.requests]


def rebuilt(turn: Turn) -> list[tuple[list[dict], list[dict]]]:
    return [(step.messages, step.tools) for step in turn_trace(turn).steps]


async def test_each_step_reads_back_exactly_as_the_model_got_it(make_session, run_turn, model, mcp_sql_tool):
    await AgentMode.objects.filter(key="general").aupdate(tool_policy=["*"])
    session = await make_session(execution="agent")
    model.reply("", tool_calls=[("sql__query", {"sql": "select month, revenue from sales"})])
    model.reply("Revenue was 10 in January.")
    await run_turn(session, "Revenue by month?")
    model.reply("", tool_calls=[("sql__query", {"sql": "select product from sales"})])
    model.reply("", tool_calls=[("agent_list_modes", "{}")])
    model.reply("By product: …")
    before = len(model.requests)
    turn = await run_turn(session, "Now by product")

    requests = sent(model)[before:]
    assert len(requests) == 3
    assert await sync_to_async(rebuilt)(turn) == requests
    trace = await sync_to_async(turn_trace)(turn)
    assert trace.history_verified is True and len(trace.history_turns) == 1
    assert trace.system_prompt == requests[0][0][0]["content"]


async def test_no_event_repeats_the_prompt_the_tools_or_the_earlier_turns(make_session, run_turn, model):
    session = await make_session()
    for i in range(4):
        model.reply(f"Answer number {i}: " + "revenue rose in the north " * 40)
        turn = await run_turn(session, f"Question number {i}")
    stored = [e async for e in TurnEvent.objects.filter(turn=turn)]
    text = json.dumps([e.payload for e in stored])
    assert "Answer number 0" not in text and "Question number 2" not in text  # earlier turns: referenced
    assert turn.trace["system_prompt"] not in text  # the system prompt: in Turn.trace only
    assert not any(schema["function"]["description"] in text for schema in turn.trace["tools"])
    [step] = await events_of(turn, "step.started")
    assert step["messages"] == [{"role": "user", "content": "Question number 3"}]
    # ... and the request reads back whole: system prompt, three earlier turns, this message.
    [(messages, _)] = await sync_to_async(rebuilt)(turn)
    assert messages == model.last_messages and len(messages) == 1 + 3 * 2 + 1


async def test_a_step_that_dropped_history_for_the_budget_reads_back_as_sent(
    make_session, run_turn, model, mcp_sql_tool, settings
):
    settings.APTIX_CONTEXT_TOKENS = 8_000
    settings.APTIX_TOOL_RESULT_CHARS = 4_000
    await AgentMode.objects.filter(key="general").aupdate(tool_policy=["*"])
    session = await make_session(execution="agent")
    for i in range(10):  # ~450 tokens each: all fit at the start
        model.reply(f"answer {i} " + "lorem ipsum dolor sit amet " * 55)
        await run_turn(session, f"question {i}")
    mcp_sql_tool.result = "| n |\n|---|\n" + "| 12345 |\n" * 300
    model.reply("", tool_calls=[("sql__query", {"sql": "select 1"})])
    model.reply("", tool_calls=[("sql__query", {"sql": "select 2"})])
    model.reply("Done.")
    before = len(model.requests)
    turn = await run_turn(session, "Two big queries")
    requests = sent(model)[before:]
    user_count = [sum(m["role"] == "user" for m in messages) for messages, _ in requests]
    assert user_count[-1] < user_count[0]  # the budget dropped earlier turns mid-turn
    assert await sync_to_async(rebuilt)(turn) == requests


async def test_changed_earlier_rows_show_as_unverified(make_session, run_turn, model):
    session = await make_session()
    model.reply("The first answer.")
    first = await run_turn(session, "First")
    model.reply("The second answer.")
    second = await run_turn(session, "Second")
    await Turn.objects.filter(pk=first.pk).aupdate(answer="Rewritten behind the audit's back.")
    trace = await sync_to_async(turn_trace)(second)
    assert trace.history_turns == [first.pk] and trace.history_verified is False


async def test_a_turn_recorded_before_the_trace_moved_still_reads(make_session, alice):
    """Turns stored whole (the prompt and tools in turn.started, step 1 with the entire request)."""
    session = await make_session()
    turn = await Turn.objects.acreate(
        session=session, index=1, user_message="Hi", mode=session.mode, status="completed"
    )
    schema = {"type": "function", "function": {"name": "agent_list_modes", "description": "d", "parameters": {}}}
    request = [{"role": "system", "content": "Old prompt"}, {"role": "user", "content": "Hi"}]
    added = [{"role": "assistant", "content": None, "tool_calls": []}, {"role": "tool", "content": "r"}]
    await TurnEvent.objects.abulk_create(
        [
            TurnEvent(
                turn=turn, seq=1, type="turn.started", payload={"system_prompt": "Old prompt", "tools": [schema]}
            ),
            TurnEvent(
                turn=turn,
                seq=2,
                type="step.started",
                payload={"step": 1, "messages_from": 0, "messages": request, "tools": ["agent_list_modes"]},
            ),
            TurnEvent(
                turn=turn,
                seq=3,
                type="step.started",
                payload={"step": 2, "messages_from": 2, "messages": added, "tools": []},
            ),
        ]
    )
    trace = await sync_to_async(turn_trace)(turn)
    assert trace.system_prompt == "Old prompt" and trace.history_verified is None
    assert [(s.messages, s.tools) for s in trace.steps] == [(request, [schema]), (request + added, [])]


async def test_an_auditor_reads_every_steps_request_on_the_turns_admin_page(
    client, auditor, password, make_session, run_turn, model
):
    session = await make_session(execution="agent")
    model.reply("The first answer, about revenue.")
    await run_turn(session, "First question")
    model.reply("Looking.", tool_calls=[("agent_list_modes", "{}")])
    model.reply("Second answer.")
    turn = await run_turn(session, "Second question")
    await sync_to_async(client.login)(username=auditor.username, password=password)
    page = (await sync_to_async(client.get)(reverse("admin:agents_turn_change", args=[turn.pk]))).content.decode()
    assert "what the model was sent" in page.lower()
    assert "Step 1: 4 messages" in page and "Step 2: 6 messages" in page  # system, earlier turn (2), message
    assert "Rebuilt from their rows, they match the digest" in page
    result = model.requests[-1]["messages"][-1]  # the tool result step 2 added
    assert result["role"] == "tool" and f"&quot;tool_call_id&quot;: &quot;{result['tool_call_id']}&quot;" in page
