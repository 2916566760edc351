"""A decision and a cancel racing for a turn that waits for approval end in exactly one of the two
outcomes: the cancel wins (the approved tool never runs, nothing is written after `turn.cancelled`)
or the decision does (its run holds the turn, and the cancel stops that run). In every case no event
follows the turn's end event, seqs stay unique, and every tool that ran has its `tool.result`.

The race is run for real, in-process (the local runner), with the cancel sent after a varying number
of event-loop turns so both orders and the windows between them are hit; on PostgreSQL too under
`make test`, where the decision and the cancel once deadlocked (opposite lock orders)."""

from __future__ import annotations

import asyncio
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import ClassVar

import pytest
from asgiref.sync import sync_to_async
from django.core.exceptions import ValidationError
from django.db import connections

from agents.approvals import CODE_STALE, UserDecision, approval_decide
from agents.events import FINAL_EVENT_TYPES
from agents.models import ToolApproval, Turn, TurnEvent
from agents.run.runners import LocalRunner
from agents.runner import use_runner
from agents.turns import error_code, turn_cancel, turn_cancel_unrun
from modes.models import AgentMode
from tests.helpers import async_db
from tools.base import InvokeResult, function_schema
from tools.registry import mcp_registry

pytestmark = async_db

ROUNDS = 24


class SlowWriteTool:
    """An MCP tool that writes (no readOnlyHint: it asks) and takes a moment, like a real server's."""

    TOOL_USAGE_METADATA = "Add a note."
    is_tool_fully_executed_on_server = True
    TOOL_NAME = "notes__add_note"
    read_only = False
    annotations = None
    executed: ClassVar[list[str]] = []  # the turn id of each execution that started

    @staticmethod
    def get_schema():
        return function_schema("notes__add_note", "Add a note.", {"text": {"type": "string"}}, required=["text"])

    async def execute(self, arguments_json, context):
        type(self).executed.append(context.turn_id)
        await asyncio.sleep(0.005)
        return InvokeResult.create("Added note 1.")


@pytest.fixture
def write_tool():
    SlowWriteTool.executed = []
    mcp_registry.register(SlowWriteTool())
    yield SlowWriteTool
    mcp_registry.unregister("notes__add_note")


async def _events(turn_id: str) -> list[TurnEvent]:
    return [e async for e in TurnEvent.objects.filter(turn_id=turn_id).order_by("seq")]


async def test_a_decision_and_a_cancel_end_in_one_outcome(make_session, run_turn, model, alice, write_tool, llm):
    await AgentMode.objects.filter(key="general").aupdate(tool_policy=["*"])
    outcomes: dict[str, int] = {}
    for round_ in range(ROUNDS):
        session = await make_session(execution="agent")
        model.clear()
        model.reply("", tool_calls=[("notes__add_note", {"text": f"note {round_}"})])
        turn = await run_turn(session, "Add a note")
        assert turn.status == Turn.Status.AWAITING_APPROVAL
        [call] = turn.state["awaiting"]
        model.reply("Added.")
        with use_runner(LocalRunner()) as runner:
            complete = await sync_to_async(approval_decide)(
                turn=turn, decisions=[UserDecision(call["id"], approve=True, scope="once")], user=alice
            )
            assert complete
            task = runner.start(turn.id)
            for _ in range(round_ % 8):  # the cancel lands at a different point of the run each round
                await asyncio.sleep(0)
            await turn_cancel(turn=await Turn.objects.aget(pk=turn.id), runner=runner)
            ended = await runner.wait(turn.id, task)

        events = await _events(turn.id)
        finals = [e for e in events if e.type in FINAL_EVENT_TYPES]
        where = f"round {round_}: {[(e.seq, e.type) for e in events]}"
        assert ended.is_finished, where
        assert len(finals) == 1 and finals[0] is events[-1], where  # nothing after the end
        assert [e.seq for e in events] == list(range(1, len(events) + 1)), where
        ran = SlowWriteTool.executed.count(turn.id)
        results = [e for e in events if e.type == "tool.result" and e.payload["id"] == call["id"]]
        assert ran <= 1 and len(results) == ran, where  # every execution audited, none after the end
        outcomes[f"{ended.status}, tool ran: {bool(ran)}"] = (
            outcomes.get(f"{ended.status}, tool ran: {bool(ran)}", 0) + 1
        )
    assert sum(outcomes.values()) == ROUNDS, outcomes


async def test_a_run_that_arrives_after_the_cancel_runs_nothing(make_session, run_turn, model, alice, write_tool, llm):
    """The order that lost most often: the decision is recorded, the cancel ends the turn, and only
    then does the dispatched run load it."""
    await AgentMode.objects.filter(key="general").aupdate(tool_policy=["*"])
    session = await make_session(execution="agent")
    model.reply("", tool_calls=[("notes__add_note", {"text": "late"})])
    turn = await run_turn(session, "Add a note")
    [call] = turn.state["awaiting"]
    model.reply("Added.")
    await sync_to_async(approval_decide)(
        turn=turn, decisions=[UserDecision(call["id"], approve=True, scope="once")], user=alice
    )
    await turn_cancel(turn=await Turn.objects.aget(pk=turn.id))
    before = await _events(turn.id)
    assert before[-1].type == "turn.cancelled"
    with use_runner(LocalRunner()) as runner:
        ended = await runner.wait(turn.id, runner.start(turn.id))
    assert ended.status == Turn.Status.CANCELLED
    assert [(e.seq, e.type) for e in await _events(turn.id)] == [(e.seq, e.type) for e in before]
    assert SlowWriteTool.executed == [] and model.pending == 1  # no tool ran, no model call was made


def _decide_or_stale(turn: Turn, call_id: str, user) -> str:
    try:
        approval_decide(turn=turn, decisions=[UserDecision(call_id, approve=True, scope="session")], user=user)
    except ValidationError as exc:
        assert error_code(exc) == CODE_STALE, exc  # the lost race: 409 for the web and the API
        return "stale"
    finally:
        connections.close_all()
    return "decided"


def _cancel(turn: Turn) -> str:
    try:
        return "cancelled" if turn_cancel_unrun(turn) else "too late"
    finally:
        connections.close_all()


async def test_a_decision_and_a_cancel_at_once_neither_deadlocks_nor_both_win(
    make_session, run_turn, model, alice, write_tool
):
    """Two threads, one deciding and one cancelling, released together: on PostgreSQL they took their
    locks in opposite orders (turn then approvals, approvals then turn) and one died with 'deadlock
    detected' (an HTTP 500). Now one waits for the other, and exactly one of them wins."""
    await AgentMode.objects.filter(key="general").aupdate(tool_policy=["*"])
    for round_ in range(8):
        session = await make_session(execution="agent")
        model.clear()
        model.reply("", tool_calls=[("notes__add_note", {"text": f"note {round_}"})])
        turn = await run_turn(session, "Add a note")
        [call] = turn.state["awaiting"]
        barrier = threading.Barrier(2)

        def decide(turn=turn, call_id=call["id"], barrier=barrier) -> str:
            barrier.wait()
            return _decide_or_stale(turn, call_id, alice)

        def cancel(turn=turn, barrier=barrier) -> str:
            barrier.wait()
            return _cancel(turn)

        with ThreadPoolExecutor(2) as pool:
            decided, cancelled = await asyncio.gather(
                asyncio.wrap_future(pool.submit(decide)), asyncio.wrap_future(pool.submit(cancel))
            )
        turn = await Turn.objects.aget(pk=turn.pk)
        assert turn.status == Turn.Status.CANCELLED and cancelled == "cancelled", (round_, decided, cancelled)
        row = await ToolApproval.objects.aget(turn=turn)
        # The decision came first (and the cancel then ended the turn it no longer resumed) or the
        # cancel did (and the decision was told it was too late); never both, never neither.
        expected = {"decided": ToolApproval.Decision.APPROVED, "stale": ToolApproval.Decision.CANCELLED}
        assert row.decision == expected[decided], (round_, decided, row.decision)
