"""Team catalogs in turns, through the scripted model (the tools as the model calls them) and the
built-in offline model (its mode proposals): a member of team A never lists, switches to or is
offered a mode only for team B."""

from __future__ import annotations

import json

import pytest
from asgiref.sync import sync_to_async

from agents.models import AgentSession
from agents.run.reasoner import Reasoner
from modes.models import ModeHistory
from tests.helpers import inline_db
from tests.helpers.catalogs import B_ONLY, team_only_mode

pytestmark = inline_db

SECRET_REQUEST = "Open the secret merger playbook for the board"
TOOL_FAILED = "ModeChangeTool failed to change the session mode. "


@pytest.fixture
async def b_only(team_b):
    return await sync_to_async(team_only_mode)(
        team_b, description="Secret merger playbooks for the board.", example_utterances=[SECRET_REQUEST]
    )


def tool_message(request: dict) -> dict:
    """The last tool result the request sends the model (this turn's)."""
    return next(m for m in reversed(request["messages"]) if m["role"] == "tool")


async def test_agent_list_modes_lists_only_the_sessions_team_modes(
    make_session, run_turn, model, team_b, carol, b_only
):
    for session, listed in [
        (await make_session(execution="agent"), False),  # alice, team A
        (await make_session(team=team_b, user=carol, execution="agent"), True),
    ]:
        model.clear()
        model.reply("", tool_calls=[("agent_list_modes", {"includeExamples": True})])
        model.reply("Here they are.")
        await run_turn(session, "What modes are there?")
        result = json.loads(tool_message(model.requests[-1])["content"])
        keys = [m["key"] for m in result["modes"]]
        assert (B_ONLY in keys) is listed, keys
        assert "general" in keys
        text = json.dumps(result)
        assert ("B Secrets" in text) is listed and (SECRET_REQUEST in text) is listed


async def test_agent_list_modes_marks_the_teams_own_default(make_session, run_turn, model, team_b, carol, b_only):
    from modes.models import TeamDefaultMode

    await TeamDefaultMode.objects.acreate(team=team_b, mode=b_only)
    session = await make_session(team=team_b, user=carol, mode="general", execution="agent")
    model.reply("", tool_calls=[("agent_list_modes", {})])
    model.reply("Listed.")
    await run_turn(session, "Which modes?")
    result = json.loads(tool_message(model.requests[-1])["content"])
    assert [m["key"] for m in result["modes"] if m["isDefault"]] == [B_ONLY]


async def test_agent_change_mode_to_another_teams_mode_fails_as_an_unknown_mode(
    make_session, run_turn, model, settings, b_only
):
    settings.APTIX_MODE_CHANGE_CONSENT = "trust"  # the tool itself runs: the refusal is the manager's
    session = await make_session(execution="agent")
    answers = []
    for mode in [B_ONLY, "astrology"]:
        model.clear()
        model.reply("", tool_calls=[("agent_change_mode", {"mode": mode, "branch": False, "reason": "try"})])
        model.reply("Could not switch.")
        await run_turn(session, "switch")
        answers.append(tool_message(model.requests[-1])["content"])
    valid = "Valid modes: general, ddr-authoring, workflow-authoring, data-analysis."
    assert [json.loads(a) for a in answers] == [
        {"error": f"{TOOL_FAILED}Unknown or inactive mode '{B_ONLY}'. {valid}"},
        {"error": f"{TOOL_FAILED}Unknown or inactive mode 'astrology'. {valid}"},
    ]
    assert (await AgentSession.objects.aget(pk=session.id)).mode == "general"
    assert not await ModeHistory.objects.filter(session_id=session.id).aexists()


async def test_a_consented_choice_of_another_teams_mode_changes_nothing(make_session, run_turn, model, b_only):
    """A crafted request: the structured choice names team B's mode; the model calls the tool with it."""
    session = await make_session(execution="agent")
    model.reply("", tool_calls=[("agent_change_mode", {"mode": B_ONLY, "branch": False, "reason": "asked"})])
    model.reply("No such mode.")
    turn = await run_turn(session, "2", choice={"mode": B_ONLY, "branch": False})
    assert turn.response_mode == "general"
    assert f"Unknown or inactive mode '{B_ONLY}'" in tool_message(model.requests[-1])["content"]
    assert (await AgentSession.objects.aget(pk=session.id)).mode == "general"


async def test_the_offline_model_proposes_only_the_sessions_team_modes(
    make_session, run_turn, offline, team_b, carol, b_only
):
    in_b = await run_turn(await make_session(team=team_b, user=carol), SECRET_REQUEST, reasoner=Reasoner(llm=offline))
    in_a = await run_turn(await make_session(), SECRET_REQUEST, reasoner=Reasoner(llm=offline))
    await offline.client.close()
    assert f"**B Secrets** (`{B_ONLY}`)" in in_b.answer  # proposed to team B ...
    assert "B Secrets" not in in_a.answer and B_ONLY not in in_a.answer  # ... never named to team A


async def test_a_branch_into_a_teams_own_mode_opens_a_child_session_there(
    make_session, run_turn, model, team_b, carol, b_only
):
    from agents.branching import session_branch

    session = await make_session(team=team_b, user=carol, execution="agent")
    model.reply("", tool_calls=[("agent_change_mode", {"mode": B_ONLY, "branch": True, "reason": "secret work"})])
    model.reply("Continue in a new session.")
    turn = await run_turn(session, SECRET_REQUEST, choice={"mode": B_ONLY, "branch": True})
    assert turn.status == "completed"
    model.reply("On it.")
    child, _first = await sync_to_async(session_branch)(session=session, turn_id=turn.id, user=carol)
    assert (child.mode, child.team_id, child.parent_id) == (B_ONLY, team_b.id, session.id)
