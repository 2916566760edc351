"""The decision/cancel race on the worker path: the approval puts the resumed run on the run queue
for a real `aptix_worker` process while this process cancels the turn. Whichever wins, the turn ends
once, nothing is written after its end event, and the approved tool (a mode change, whose effect is a
ModeHistory row) ran only if its `tool.result` says so."""

from __future__ import annotations

import asyncio

import pytest
from asgiref.sync import sync_to_async

from agents.approvals import UserDecision, approval_decide
from agents.events import FINAL_EVENT_TYPES
from agents.models import Turn, TurnEvent
from agents.runner import get_runner
from agents.turns import turn_cancel, turn_start
from modes.models import ModeHistory
from tests.helpers import async_db

pytestmark = [pytest.mark.slow, async_db]

SWITCH = {"mode": "data-analysis", "branch": False, "reason": "The user wants revenue charts."}
ROUNDS = 10


async def _paused_for_a_mode_change(worker, make_session) -> tuple[Turn, str]:
    session = await make_session(execution="agent")
    worker.clear()
    worker.reply("", tool_calls=[("agent_change_mode", SWITCH)])
    turn = await sync_to_async(turn_start)(session=session, text="Chart revenue by month")
    await get_runner().start(turn.id)
    turn = await asyncio.wait_for(get_runner().wait(turn.id), timeout=30)
    assert turn.status == Turn.Status.AWAITING_APPROVAL, turn.status
    return turn, turn.state["awaiting"][0]["id"]


async def _follow_up_ended(turn: Turn) -> None:
    """A switching turn that completed starts a follow-up in its session (from the worker, just after
    its end): wait for that one to end too."""
    if turn.status != Turn.Status.COMPLETED or turn.response_mode == turn.mode:
        return
    async with asyncio.timeout(30):
        while not await Turn.objects.filter(
            session_id=turn.session_id, origin=Turn.Origin.CONTINUED, finished_at__isnull=False
        ).aexists():
            await asyncio.sleep(0.05)  # made and run in the worker process: no event of it reaches here


async def test_on_workers_a_decision_and_a_cancel_end_in_one_outcome(worker, make_session, alice):
    outcomes: list[str] = []
    for round_ in range(ROUNDS):
        turn, call_id = await _paused_for_a_mode_change(worker, make_session)
        worker.reply("Switched; here is the chart.")
        worker.reply("The chart, in the new mode.")  # the follow-up a completed consented switch starts
        await sync_to_async(approval_decide)(turn=turn, decisions=[UserDecision(call_id, approve=True)], user=alice)
        dispatched = get_runner().start(turn.id)  # the resumed run, onto the queue
        await asyncio.sleep(0.003 * (round_ % 5))  # the cancel lands before, during or after the worker's resume
        await turn_cancel(turn=await Turn.objects.aget(pk=turn.id))
        ended = await asyncio.wait_for(get_runner().wait(turn.id, dispatched), timeout=30)

        events = [e async for e in TurnEvent.objects.filter(turn_id=turn.id).order_by("seq")]
        where = f"round {round_}: {[(e.seq, e.type) for e in events]}"
        finals = [e for e in events if e.type in FINAL_EVENT_TYPES]
        assert ended.is_finished and len(finals) == 1 and finals[0] is events[-1], where
        assert [e.seq for e in events] == list(range(1, len(events) + 1)), where
        results = [e for e in events if e.type == "tool.result" and e.payload["id"] == call_id]
        changed = await ModeHistory.objects.filter(turn_id=turn.id).acount()
        assert len(results) <= 1, where
        if results and results[0].payload.get("stopped"):  # stopped mid-call: it may have had its effect
            assert changed <= 1, where
        else:  # no result: it never ran; a result: it ran, and its effect is there exactly if it succeeded
            assert changed == sum(bool(r.payload["ok"]) for r in results), where
        outcomes.append(f"{ended.status}/{changed}")
        await _follow_up_ended(ended)  # so it takes no reply queued for the next round
    assert len(outcomes) == ROUNDS
