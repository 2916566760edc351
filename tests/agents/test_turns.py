"""Turn status has one owner (agents/turns.py) and a transition table checked in the database
write itself: an ended turn never flips back, however late a write arrives."""

from __future__ import annotations

import pytest
from asgiref.sync import sync_to_async

from agents.events import EventRecorder
from agents.events.payloads import final_payload
from agents.models import Turn
from agents.state import EndedState, PausedState, turn_state
from agents.turns import (
    ALLOWED_FROM,
    TransitionError,
    finished,
    started,
    transition,
    turn_end_unrun,
    turn_pause,
    turn_resume,
    turn_start,
)
from tests.helpers import inline_db

pytestmark = inline_db

ENDED = ("completed", "failed", "cancelled", "limit_reached")


def test_no_status_moves_an_ended_turn():
    for status, sources in ALLOWED_FROM.items():
        assert not sources & set(ENDED), status
    with pytest.raises(TransitionError):
        transition(Turn.Status.QUEUED)


async def test_a_late_final_write_does_not_overwrite_an_ended_turn(make_session):
    session = await make_session()
    turn = await sync_to_async(turn_start)(session=session, text="Hi")
    recorder = EventRecorder(turn, channel_layer=None)
    await recorder.emit(
        "turn.started",
        {"mode": "general", "execution": "ask", "model": "test", "max_steps": 1, "tool_kinds": {}},
        turn_write=started(model_label="test"),
    )
    await recorder.drain()
    assert (await Turn.objects.aget(pk=turn.pk)).status == "running"
    # The orphan sweep ends it (its process looked dead) ...
    ended = await sync_to_async(turn_end_unrun)(
        turn,
        session_id=session.id,
        status="failed",
        event_type="turn.failed",
        payload={"error": "gone"},
        mode=session.mode,
        error="gone",
    )
    assert ended
    # ... and the run's own final write arrives afterwards: it must not bring the turn back.
    write = finished(
        status="completed",
        answer="late",
        error="",
        mode=session.mode,
        mode_changes=[],
        counters={"step_count": 1, "prompt_tokens": 1, "completion_tokens": 1},
    )
    recorder.seq = await turn.events.acount()
    await recorder.emit(
        "turn.completed",
        final_payload({}, status="completed", answer="", mode="general", mode_changes=[]),
        turn_write=write,
    )
    await recorder.drain()
    saved = await Turn.objects.aget(pk=turn.pk)
    assert (saved.status, saved.error, saved.answer) == ("failed", "gone", "")
    # A second unrun ending is refused as well.
    assert not await sync_to_async(turn_end_unrun)(
        turn, session_id=session.id, status="cancelled", event_type="turn.cancelled", payload={}, mode=session.mode
    )


async def test_turn_state_has_one_shape_per_status(make_session):
    session = await make_session()
    turn = await sync_to_async(turn_start)(session=session, text="Hi")
    assert turn_state(turn) is None  # queued
    await Turn.objects.filter(pk=turn.pk).aupdate(status="running")
    turn = await Turn.objects.aget(pk=turn.pk)
    paused = PausedState(
        messages=[{"role": "user", "content": "Hi"}],
        tools=[],
        kinds={"x": "client"},
        mode="general",
        pending=[{"id": "c1", "name": "x", "arguments": "{}"}],
    )
    assert await turn_pause(turn, paused)
    reread = turn_state(await Turn.objects.aget(pk=turn.pk))
    assert isinstance(reread, PausedState) and reread == paused
    assert await turn_resume(turn)
    assert not await turn_resume(turn)  # running → running is not a transition
    change = {"previousMode": "general", "newMode": "data-analysis", "reason": "r", "branch": True}
    write = finished(status="completed", answer="a", error="", mode="data-analysis", mode_changes=[change], counters={})
    await Turn.objects.filter(pk=turn.pk).aupdate(**write.fields)
    state = turn_state(await Turn.objects.aget(pk=turn.pk))
    assert isinstance(state, EndedState) and state.mode_changes == [change] and state.branch == change


@pytest.mark.django_db
def test_a_deactivated_mode_serves_no_turn(team_a, alice):
    """A curator deactivates a mode sessions are in: the next turn of such a session runs in the
    default mode, with a ModeHistory row (source "system") saying why."""
    from agents.sessions import session_create
    from agents.turns import turn_start
    from modes.models import AgentMode, ModeHistory

    session = session_create(team=team_a, user=alice, mode="workflow-authoring")
    AgentMode.objects.filter(key="workflow-authoring").update(is_active=False)
    turn = turn_start(session=session, text="Design an approval flow")
    session.refresh_from_db()
    assert session.mode == "general" and turn.mode == "general"
    [change] = ModeHistory.objects.filter(session=session)
    assert (change.previous_mode, change.new_mode, change.source) == ("workflow-authoring", "general", "system")
    assert "workflow-authoring mode was deactivated" in change.reason and change.turn_id is None
