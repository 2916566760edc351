"""After a consented switch in the same session, the request carries on: a follow-up turn starts at once
in the new mode, in the execution its catalog entry names, with the request the switch answered, from
the process that ran the switching turn (agents/run/runners.py) through turn_submit. A switch to a new
session, a proposal the user stayed out of, or a message sent meanwhile starts nothing."""

from __future__ import annotations

from functools import partial

from asgiref.sync import sync_to_async

from agents.approvals import UserDecision, approval_decide
from agents.branching import turn_continue_after_switch
from agents.models import AgentSession, Turn
from agents.run.runners import LocalRunner
from agents.runner import use_runner
from agents.submit import turn_submit
from agents.turns import turn_start
from modes.models import ModeHistory
from tests.helpers import inline_db

pytestmark = inline_db

REQUEST = "Chart revenue by month for our orders data"
SWITCH = {"mode": "data-analysis", "branch": False, "reason": "Revenue charts need the data tools."}
HERE = {"mode": "data-analysis", "branch": False}


async def proposed(make_session, run_turn, model) -> AgentSession:
    """A general Ask session whose request got a proposal to switch to Data Analysis."""
    session = await make_session(execution="ask")
    model.reply("Data Analysis fits this better. 1) Stay 2) Switch this session 3) New session")
    await run_turn(session, REQUEST)
    return session


async def submit_and_wait(runner: LocalRunner, session: AgentSession, text: str, choice=None) -> Turn:
    submitted = await turn_submit(partial(turn_start, session=session, text=text, choice=choice))
    return await runner.wait(submitted.turn.id, submitted.started)


async def turns_of(session: AgentSession) -> list[Turn]:
    return [t async for t in Turn.objects.filter(session_id=session.id).order_by("index")]


async def test_a_switch_here_carries_the_request_on_in_the_new_mode_and_its_execution(
    make_session, run_turn, model, llm
):
    session = await proposed(make_session, run_turn, model)
    model.reply("", tool_calls=[("agent_change_mode", SWITCH)])  # the switching turn (Ask: one call)
    model.reply("Here is revenue by month.")  # the follow-up
    runner = LocalRunner()
    with use_runner(runner):
        switched = await submit_and_wait(runner, session, "2) Switch this session to Data Analysis", HERE)
        assert switched.status == "completed" and switched.response_mode == "data-analysis"
        follow_up = (await turns_of(session))[-1]
        assert follow_up.index == switched.index + 1
        follow_up = await runner.wait(follow_up.id)

    assert follow_up.origin == Turn.Origin.CONTINUED
    assert (follow_up.user_message, follow_up.mode, follow_up.execution) == (REQUEST, "data-analysis", "agent")
    assert follow_up.status == "completed" and follow_up.answer == "Here is revenue by month."
    assert model.last_messages[-1] == {"role": "user", "content": REQUEST}
    assert (await AgentSession.objects.aget(pk=session.id)).execution == "agent"  # it goes on as the mode works


async def test_staying_or_a_new_session_starts_no_follow_up(make_session, run_turn, model, llm):
    session = await proposed(make_session, run_turn, model)
    model.reply("Staying in General.")
    model.reply("", tool_calls=[("agent_change_mode", {**SWITCH, "branch": True})])
    runner = LocalRunner()
    with use_runner(runner):
        await submit_and_wait(runner, session, "1) Stay in the current mode")
        branched = await submit_and_wait(runner, session, "3) New session", {"mode": "data-analysis", "branch": True})
    # A new session is asked for: this one keeps its mode, its history records the ask.
    assert branched.status == "completed" and branched.response_mode == "general"
    assert (await AgentSession.objects.aget(pk=session.id)).mode == "general"
    history = [row async for row in ModeHistory.objects.filter(session_id=session.id)]
    assert [(h.previous_mode, h.new_mode, h.branch) for h in history] == [("general", "data-analysis", True)]
    assert len(await turns_of(session)) == 3 and model.pending == 0


async def test_the_follow_up_is_made_once_and_not_after_another_message(make_session, run_turn, model, llm):
    session = await proposed(make_session, run_turn, model)
    model.reply("", tool_calls=[("agent_change_mode", SWITCH)])
    switched = await run_turn(session, "2", choice=HERE)  # run without the runner: nothing followed it yet
    made = await sync_to_async(turn_continue_after_switch)(turn_id=switched.id)
    assert made is not None and made.user_message == REQUEST
    assert await sync_to_async(turn_continue_after_switch)(turn_id=switched.id) is None  # another process asks

    other = await proposed(make_session, run_turn, model)
    model.reply("", tool_calls=[("agent_change_mode", SWITCH)])
    switched = await run_turn(other, "2", choice=HERE)
    model.reply("Sure.")
    await run_turn(await AgentSession.objects.aget(pk=other.id), "Never mind, show my notes")
    assert await sync_to_async(turn_continue_after_switch)(turn_id=switched.id) is None


async def test_an_approved_switch_card_carries_the_turns_own_request_on(make_session, run_turn, model, llm, alice):
    session = await make_session(execution="ask")
    first = model.reply("", tool_calls=[("agent_change_mode", SWITCH)])
    paused = await run_turn(session, REQUEST)
    assert paused.status == "awaiting_approval"
    model.reply("Here is revenue by month.")
    runner = LocalRunner()
    with use_runner(runner):
        decide = partial(
            approval_decide, turn=paused, decisions=[UserDecision(first.tool_calls[0].id, True)], user=alice
        )
        submitted = await turn_submit(lambda: paused if decide() else None)
        await runner.wait(paused.id, submitted.started)
        follow_up = await runner.wait((await turns_of(session))[-1].id)
    assert (follow_up.index, follow_up.origin, follow_up.user_message) == (2, "continued", REQUEST)
    assert follow_up.status == "completed"
