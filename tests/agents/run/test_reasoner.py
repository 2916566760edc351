"""The reasoner driven through the scripted model: AGN-011 §3–§5 and spec 004 §3–§7."""

from __future__ import annotations

import asyncio
import json
import logging

import pytest
from channels.layers import get_channel_layer

from agents.events import message_events, session_group
from agents.models import AgentSession, Turn
from agents.run.reasoner import Reasoner
from agents.run.tool_calls import ToolCalls
from modes.models import AgentMode, ModeHistory
from tests.helpers import async_db
from tests.helpers.events import event_types, events_of

pytestmark = async_db

SWITCH = {"mode": "data-analysis", "branch": False, "reason": "The user wants revenue charts."}
CONSENT = {"mode": "data-analysis", "branch": False}  # the user clicked "Switch this session to Data Analysis"


# --- AGN-011 §3: mode persistence and normalisation -------------------------------------------


async def test_turn_runs_in_the_sessions_mode_and_echoes_it(make_session, run_turn, model):
    session = await make_session(mode="ddr-authoring")
    model.reply("Here is a DDR outline.")
    turn = await run_turn(session, "Outline a DDR")
    assert turn.status == "completed" and turn.answer == "Here is a DDR outline."
    assert turn.mode == turn.response_mode == "ddr-authoring"  # §3.4 / §4.5: no change → echo
    system = model.last_messages[0]
    assert system["role"] == "system" and "Current mode: ddr-authoring" in system["content"]


async def test_system_prompt_has_base_mode_prompt_and_tool_guidance(make_session, run_turn, model):
    session = await make_session(mode="data-analysis")
    model.reply("ok")
    await run_turn(session)
    mode = await AgentMode.objects.aget(key="data-analysis")
    prompt = model.last_messages[0]["content"]
    assert prompt.startswith("You are Aptix")
    assert mode.system_prompt in prompt
    assert "agent_change_mode: Use this tool to change the current agent session mode" in prompt
    assert "agent_list_modes:" in prompt


async def test_history_of_earlier_turns_is_sent(make_session, run_turn, model):
    session = await make_session()
    model.reply("First answer")
    await run_turn(session, "First question")
    model.reply("Second answer")
    await run_turn(session, "Second question")
    roles = [(m["role"], m["content"]) for m in model.last_messages[1:]]
    assert roles == [("user", "First question"), ("assistant", "First answer"), ("user", "Second question")]


# --- AGN-011 §4: tools selected once, before the loop -------------------------------------------


async def test_mode_change_tool_is_offered_whatever_the_policy_and_toggles(make_session, run_turn, model):
    await AgentMode.objects.filter(key="ddr-authoring").aupdate(tool_policy=[])
    session = await make_session(mode="ddr-authoring")
    session.tool_toggles = {"agent_change_mode": False, "agent_list_modes": False}
    await session.asave(update_fields=["tool_toggles"])
    model.reply("ok")
    await run_turn(session)
    assert model.last_tools == ["agent_change_mode"]


async def test_policy_and_toggles_filter_internal_tools(make_session, run_turn, model):
    session = await make_session(mode="data-analysis")
    model.reply("ok")
    await run_turn(session)
    assert set(model.last_tools) == {"agent_change_mode", "agent_list_modes", "image_gen"}
    session.tool_toggles = {"image_gen": False}
    await session.asave(update_fields=["tool_toggles"])
    model.reply("ok")
    await run_turn(session)
    assert set(model.last_tools) == {"agent_change_mode", "agent_list_modes"}


async def test_ask_never_offers_mcp_tools_and_makes_one_call(make_session, run_turn, model, mcp_sql_tool):
    session = await make_session(mode="data-analysis", execution="ask")
    model.reply("", tool_calls=[("image_gen", {"prompt": "Revenue", "labels": ["a"], "values": [1]})])
    turn = await run_turn(session, "Chart revenue")
    assert model.calls == 1
    assert "sql__query" not in model.last_tools
    assert turn.status == "completed" and "![Revenue](" in turn.answer
    assert turn.step_count == 1


async def test_agent_offers_mcp_tools_allowed_by_policy(make_session, run_turn, model, mcp_sql_tool):
    session = await make_session(mode="data-analysis", execution="agent")
    model.reply("", tool_calls=[("sql__query", {"sql": "select 1"})])
    model.reply("Revenue was 10 in January.")
    turn = await run_turn(session, "Revenue by month?")
    assert "sql__query" in model.requests[0]["tools"][-1]["function"]["name"] or "sql__query" in model.last_tools
    assert mcp_sql_tool.calls == ['{"sql": "select 1"}']
    assert turn.status == "completed" and turn.answer == "Revenue was 10 in January."
    tool_message = model.last_messages[-1]
    assert tool_message["role"] == "tool" and "2026-01" in tool_message["content"]


async def test_mcp_tools_outside_the_policy_or_toggled_off_are_omitted(make_session, run_turn, model, mcp_sql_tool):
    session = await make_session(mode="general", execution="agent")  # general's policy has no sql.*
    model.reply("ok")
    await run_turn(session)
    assert "sql__query" not in model.last_tools
    session = await make_session(mode="data-analysis", execution="agent")
    session.tool_toggles = {"sql": False}
    await session.asave(update_fields=["tool_toggles"])
    model.reply("ok")
    await run_turn(session)
    assert "sql__query" not in model.last_tools


async def test_client_tools_are_appended_and_never_removed(make_session, run_turn, model):
    await AgentMode.objects.filter(key="general").aupdate(tool_policy=[])
    session = await make_session()
    client_tool = {
        "type": "function",
        "function": {
            "name": "open_file",
            "description": "Open a file.",
            "parameters": {"type": "object", "properties": {}},
        },
    }
    model.reply("ok")
    await run_turn(session, client_tools=[client_tool])
    assert model.last_tools == ["agent_change_mode", "open_file"]


async def test_tool_list_is_not_changed_mid_turn_by_a_mode_change(make_session, run_turn, model):
    session = await make_session(mode="general", execution="agent")
    model.reply("", tool_calls=[("agent_change_mode", SWITCH)])
    model.reply("Switched.")
    await run_turn(session, "2", choice=CONSENT)
    first, second = model.requests
    assert [t["function"]["name"] for t in first["tools"]] == [t["function"]["name"] for t in second["tools"]]
    assert "image_gen" in [t["function"]["name"] for t in first["tools"]]
    # §5.3: the in-flight mode follows the change for the next call of the same turn
    assert "Current mode: general" in first["messages"][0]["content"]
    assert "Current mode: data-analysis" in second["messages"][0]["content"]


# --- AGN-011 §5: mode changes inside a turn ------------------------------------------------------


async def test_mode_change_persists_once_and_response_mode_follows(make_session, run_turn, model):
    session = await make_session(execution="ask")
    model.reply("Switching.", tool_calls=[("agent_change_mode", SWITCH)])
    turn = await run_turn(session, "2", choice=CONSENT)
    assert turn.status == "completed"
    assert turn.mode == "general" and turn.response_mode == "data-analysis"
    assert (await AgentSession.objects.aget(pk=session.id)).mode == "data-analysis"
    rows = [r async for r in ModeHistory.objects.filter(session_id=session.id)]
    assert len(rows) == 1
    assert (rows[0].previous_mode, rows[0].new_mode, rows[0].turn_id) == ("general", "data-analysis", turn.id)
    assert rows[0].tool_call_id and rows[0].source == "tool"
    [changed] = await events_of(turn, "mode.changed")
    assert changed == {
        "previousMode": "general",
        "newMode": "data-analysis",
        "reason": SWITCH["reason"],
        "branch": False,
    }
    assert "Mode changed: general → data-analysis." in turn.answer


async def test_two_mode_changes_last_successful_wins_with_a_warning(make_session, run_turn, model, caplog, settings):
    caplog.set_level(logging.WARNING, logger="aptix.reasoner")
    settings.APTIX_MODE_CHANGE_CONSENT = "trust"  # two model-initiated changes in one turn: no one to ask
    session = await make_session(execution="agent")
    model.reply("", tool_calls=[("agent_change_mode", SWITCH)])
    model.reply(
        "",
        tool_calls=[
            ("agent_change_mode", {"mode": "ddr-authoring", "branch": False, "reason": "Actually a DDR."}),
            ("agent_change_mode", {"mode": "no-such-mode", "branch": False, "reason": "typo"}),
        ],
    )
    model.reply("Done.")
    turn = await run_turn(session, "switch twice")
    assert turn.response_mode == "ddr-authoring"
    assert [r.new_mode async for r in ModeHistory.objects.filter(session_id=session.id).order_by("id")] == [
        "data-analysis",
        "ddr-authoring",
    ]
    assert any("last successful change wins" in r.getMessage() for r in caplog.records)
    results = await events_of(turn, "tool.result")
    assert results[-1]["ok"] is False and "Valid modes: general" in results[-1]["error"]


async def test_branch_is_surfaced(make_session, run_turn, model):
    session = await make_session()
    model.reply("", tool_calls=[("agent_change_mode", {**SWITCH, "branch": True})])
    turn = await run_turn(session, "3", choice={"mode": "data-analysis", "branch": True})
    [final] = await events_of(turn, "turn.completed")
    assert final["branch"] == {"mode": "data-analysis", "reason": SWITCH["reason"]}
    assert (await ModeHistory.objects.aget(session_id=session.id)).branch is True
    assert turn.state["mode_changes"][0]["branch"] is True


async def test_next_turn_uses_the_new_mode_and_its_tools(make_session, run_turn, model, mcp_sql_tool):
    session = await make_session(execution="agent")
    model.reply("", tool_calls=[("agent_change_mode", SWITCH)])
    model.reply("Switched.")
    await run_turn(session, "2", choice=CONSENT)
    assert "sql__query" not in model.last_tools
    model.reply("ok")
    turn = await run_turn(session, "revenue?")
    assert turn.mode == "data-analysis" and "sql__query" in model.last_tools


# --- spec 004 §3, §6: the loops -----------------------------------------------------------------


async def test_ask_followup_makes_one_more_call_without_tools(make_session, llm, run_turn, model):
    session = await make_session(execution="ask")
    model.reply("", tool_calls=[("agent_list_modes", {})])
    model.reply("There are four modes.")
    turn = await run_turn(session, "what modes?", reasoner=Reasoner(llm=llm, ask_followup=True))
    assert model.calls == 2 and "tools" not in model.last_request
    assert turn.answer == "There are four modes." and turn.step_count == 2


async def test_ask_without_followup_shows_tool_results(make_session, run_turn, model):
    session = await make_session(execution="ask")
    model.reply("", tool_calls=[("agent_list_modes", {})])
    turn = await run_turn(session, "what modes?")
    assert model.calls == 1
    assert "**Data Analysis** (`data-analysis`)" in turn.answer


async def test_agent_loops_until_a_reply_without_tool_calls(make_session, run_turn, model):
    session = await make_session(execution="agent")
    model.reply("", tool_calls=[("agent_list_modes", {})])
    model.reply("", tool_calls=[("agent_list_modes", {"includeExamples": True})])
    model.reply("Final.")
    turn = await run_turn(session)
    assert turn.status == "completed" and turn.step_count == 3 and turn.answer == "Final."
    types = await event_types(turn)
    assert types[0] == "turn.started" and types[-1] == "turn.completed"
    assert types.count("step.started") == 3 and types.count("tool.result") == 2


async def test_agent_stops_at_max_steps(make_session, llm, run_turn, model):
    session = await make_session(execution="agent")
    for _ in range(3):
        model.reply("still working", tool_calls=[("agent_list_modes", {})])
    model.reply("Here is what I found so far.")  # the final call: no tools, its text is the answer
    turn = await run_turn(session, reasoner=Reasoner(llm=llm, max_steps=3))
    assert turn.status == "limit_reached" and model.calls == 4 and turn.step_count == 4
    assert "tools" not in model.last_request and turn.answer == "Here is what I found so far."
    [limit] = await events_of(turn, "limit.reached")
    assert limit["limit"] == "steps" and "3 steps" in limit["message"]
    assert (await event_types(turn))[-1] == "limit.reached"


async def test_agent_stops_when_the_token_budget_is_spent(make_session, llm, run_turn, model):
    session = await make_session(execution="agent")
    model.reply("", tool_calls=[("agent_list_modes", {})], prompt_tokens=900, completion_tokens=200)
    model.reply("The answer from what was gathered.", prompt_tokens=50, completion_tokens=10)  # the final call
    turn = await run_turn(session, reasoner=Reasoner(llm=llm, token_budget=1000))
    assert turn.status == "limit_reached" and model.calls == 2 and "tools" not in model.last_request
    assert turn.answer == "The answer from what was gathered."
    assert (turn.prompt_tokens, turn.completion_tokens) == (950, 210)
    [limit] = await events_of(turn, "limit.reached")
    assert limit["limit"] == "tokens" and limit["used"] == 1100


async def test_several_tool_calls_all_run_and_one_failure_loses_nothing(make_session, run_turn, model):
    session = await make_session(execution="agent")
    reply = model.reply(
        "",
        tool_calls=[
            ("agent_list_modes", {}),
            ("no_such_tool", {"x": 1}),
            ("image_gen", "{not json"),
            ("agent_change_mode", {"mode": "", "branch": False, "reason": "r"}),
        ],
    )
    model.reply("Done.")
    turn = await run_turn(session)
    assert turn.status == "completed"
    tool_messages = [m for m in model.last_messages if m["role"] == "tool"]
    assert [m["tool_call_id"] for m in tool_messages] == [c.id for c in reply.tool_calls]
    assert json.loads(tool_messages[0]["content"])["modes"]
    assert "Unknown tool 'no_such_tool'" in tool_messages[1]["content"]
    assert "not valid JSON" in tool_messages[2]["content"]
    assert "ModeChangeTool requires a non-empty 'mode' string." in tool_messages[3]["content"]
    results = await events_of(turn, "tool.result")
    assert [r["ok"] for r in results] == [True, False, False, False]
    assert all("duration_ms" in r for r in results)


async def test_events_have_consecutive_seq_and_carry_the_trace(make_session, run_turn, model, listener):
    session = await make_session()
    drain = await listener(session.id)
    model.reply("A fairly long answer " * 20)
    turn = await run_turn(session)
    seqs = [e.seq async for e in turn.events.order_by("seq")]
    assert seqs == list(range(1, len(seqs) + 1))
    [started] = await events_of(turn, "turn.started")
    assert started["model"] == "scripted"
    # The system prompt and tool schemas are stored once per turn (Turn.trace), not in its events.
    assert turn.trace["system_prompt"].startswith("You are Aptix") and "system_prompt" not in started
    assert [t["function"]["name"] for t in turn.trace["tools"]] == model.last_tools
    [step] = await events_of(turn, "step.started")
    assert step["messages"] == [{"role": "user", "content": "Hello"}]
    deltas = "".join(p["text"] for p in await events_of(turn, "model.delta"))
    assert deltas == turn.answer
    [message] = await events_of(turn, "model.message")
    assert message["usage"]["prompt_tokens"] > 0
    broadcast = await drain()
    assert [m["seq"] for m in broadcast] == seqs  # written, then sent, in order
    assert all(m["turn_id"] == turn.id for m in broadcast)
    # The trace stays server-side: the live stream carries no prompt, messages or tool schemas.
    live_started = next(m["payload"] for m in broadcast if m["event"] == "turn.started")
    assert live_started["model"] == "scripted" and "tool_kinds" in live_started
    assert not {"system_prompt", "tools"} & set(live_started)
    assert all("messages" not in m["payload"] for m in broadcast)


async def test_a_step_writes_its_events_and_counters_together(make_session, run_turn, model):
    """Deferred events are never lost or reordered: every event of a tool-calling turn is stored
    with consecutive seqs, and the turn's counters match its model.message events."""
    session = await make_session(execution="agent")
    model.reply("Looking.", tool_calls=[("agent_list_modes", "{}")])
    model.reply(
        "Switching.", tool_calls=[("agent_change_mode", '{"mode": "data-analysis", "reason": "data", "branch": false}')]
    )
    model.reply("Done.")
    turn = await run_turn(session, choice=CONSENT)
    types = [e.type async for e in turn.events.order_by("seq")]
    assert [t for t in types if t != "model.delta"] == [
        "turn.started",
        "step.started",
        "model.message",
        "tool.called",
        "tool.result",
        "step.started",
        "model.message",
        "tool.called",
        "tool.result",
        "mode.changed",
        "step.started",
        "model.message",
        "turn.completed",
    ]
    messages = await events_of(turn, "model.message")
    assert turn.step_count == 3 == len(messages)
    assert turn.prompt_tokens == sum(m["usage"]["prompt_tokens"] for m in messages)


async def test_deltas_are_coalesced(make_session, run_turn, model):
    session = await make_session()
    model.reply("word " * 200)  # ~90 chunks arriving at once
    turn = await run_turn(session)
    deltas = await events_of(turn, "model.delta")
    assert 1 <= len(deltas) < 10


# --- cancel and provider errors ----------------------------------------------------------------


async def test_cancel_mid_stream_ends_the_turn_cancelled(make_session, llm, model):
    from asgiref.sync import sync_to_async

    from agents.runner import get_runner
    from agents.turns import turn_cancel, turn_start

    session = await make_session(execution="agent")
    model.reply("slow " * 2000, chunk_delay=0.01, tool_calls=[("agent_list_modes", {})])  # ~20 s
    layer = get_channel_layer()
    channel = await layer.new_channel()
    await layer.group_add(session_group(session.id), channel)
    turn = await sync_to_async(turn_start)(session=session, text="go")
    task = get_runner().start(turn.id)
    while not any(
        e["event"] == "model.delta" for e in message_events(await asyncio.wait_for(layer.receive(channel), timeout=10))
    ):
        pass  # the reply is streaming
    await layer.group_discard(session_group(session.id), channel)
    assert await turn_cancel(turn=await Turn.objects.aget(pk=turn.id)) is True
    await task
    await asyncio.wait_for(model.stream_cancelled.wait(), 2)
    turn = await Turn.objects.aget(pk=turn.id)
    assert turn.status == "cancelled" and turn.cancel_requested
    types = await event_types(turn)
    assert types[-1] == "turn.cancelled" and "tool.called" not in types
    streamed = "".join(p["text"] for p in await events_of(turn, "model.delta"))
    assert turn.answer == streamed and turn.answer.startswith("slow ")  # the partial answer is kept


async def test_rate_limit_then_success_is_retried(make_session, run_turn, model):
    session = await make_session()
    model.error(429)
    model.reply("after retry")
    turn = await run_turn(session)
    assert turn.status == "completed" and turn.answer == "after retry" and model.calls == 2


@pytest.mark.parametrize(
    "script, message",
    [
        (lambda m: [m.error(500) for _ in range(3)], "The model server had an error (HTTP 500)"),
        (lambda m: m.error(401), "rejected the credentials (HTTP 401). Check OPENAI_API_KEY."),
        (lambda m: [m.error(429) for _ in range(3)], "rate-limiting requests (HTTP 429)"),
        (lambda m: m.malformed(), "malformed stream"),
    ],
)
async def test_provider_errors_fail_the_turn_with_a_clear_message(make_session, run_turn, model, script, message):
    session = await make_session()
    script(model)
    turn = await run_turn(session)
    assert turn.status == "failed" and message in turn.error
    [failed] = await events_of(turn, "turn.failed")
    assert message in failed["error"]


async def test_timeout_fails_the_turn(make_session, model):
    from agents.llm import LLMClient
    from tests.helpers.scripted_model import openai_client

    client = LLMClient(openai_client(model, max_retries=0, timeout=0.2), model="m", label="scripted")
    session = await make_session()
    model.delay(5)
    model.reply("too late")
    from asgiref.sync import sync_to_async

    from agents.turns import turn_start

    turn = await sync_to_async(turn_start)(session=session, text="hi")
    await Reasoner(llm=client).run(turn.id)
    turn = await Turn.objects.aget(pk=turn.id)
    assert turn.status == "failed" and "did not answer in time" in turn.error
    await client.client.close()


async def test_turn_never_stays_running_after_an_internal_error(make_session, run_turn, model, monkeypatch):
    session = await make_session()
    model.reply("", tool_calls=[("agent_list_modes", {})])

    async def explode(*args, **kwargs):
        raise RuntimeError("recorder broke")

    monkeypatch.setattr(ToolCalls, "run_reply", explode)
    turn = await run_turn(session)
    assert turn.status == "failed" and "logged" in turn.error and turn.finished_at is not None
