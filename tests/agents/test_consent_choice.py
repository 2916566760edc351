"""A proposal's button is consent to exactly what it shows: the mode it names, in this session or in
a new one. A model call that asks for something else (another mode, or `branch` the other way) waits
for the user's approval instead of running on that consent."""

from __future__ import annotations

from agents.models import ToolApproval
from modes.models import ModeHistory
from tests.helpers import inline_db

pytestmark = inline_db

SWITCH = {"mode": "data-analysis", "branch": False, "reason": "The user wants revenue charts."}


async def test_consent_to_switch_here_is_not_consent_to_a_new_session(make_session, run_turn, model):
    session = await make_session(execution="agent")
    model.reply("", tool_calls=[("agent_change_mode", {**SWITCH, "branch": True})])
    turn = await run_turn(session, "2", choice={"mode": "data-analysis", "branch": False})
    assert turn.status == "awaiting_approval"
    assert await ModeHistory.objects.acount() == 0
    [row] = [r async for r in ToolApproval.objects.filter(turn=turn)]
    assert row.kind == ToolApproval.Kind.MODE_CHANGE


async def test_consent_to_a_new_session_is_not_consent_to_switch_here(make_session, run_turn, model):
    session = await make_session(execution="agent")
    model.reply("", tool_calls=[("agent_change_mode", SWITCH)])
    turn = await run_turn(session, "3", choice={"mode": "data-analysis", "branch": True})
    assert turn.status == "awaiting_approval" and await ModeHistory.objects.acount() == 0


async def test_consent_to_a_new_session_runs_the_branching_call(make_session, run_turn, model):
    session = await make_session(execution="agent")
    model.reply("", tool_calls=[("agent_change_mode", {**SWITCH, "branch": True})])
    model.reply("Switched; continue in the new session.")
    turn = await run_turn(session, "3", choice={"mode": "data-analysis", "branch": True})
    assert turn.status == "completed" and turn.response_mode == "general"  # the new session has the mode
    assert await ToolApproval.objects.acount() == 0
