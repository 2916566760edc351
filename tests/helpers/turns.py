"""Turns written straight to the database, as a finished run leaves them, for tests of what is drawn
or done with them afterwards."""

from __future__ import annotations

from datetime import timedelta

from django.utils import timezone

from agents.models import Turn, TurnEvent

TOOL_CALLED = ("tool.called", {"id": "call_1", "name": "fixture__sleep", "kind": "mcp", "arguments": "{}"})


def ended_turn(session, *, status="cancelled", index=1, message="Hello", state=None, **fields) -> Turn:
    """A turn of `session` that has ended with `status`."""
    return Turn.objects.create(
        session=session,
        index=index,
        user_message=message,
        mode=session.mode,
        status=status,
        finished_at=timezone.now(),
        state=state or {},
        **fields,
    )


def add_events(turn: Turn, *typed: tuple[str, dict]) -> list[TurnEvent]:
    """Store `(type, payload)` pairs as the turn's events, seq 1, 2, …"""
    return [TurnEvent.objects.create(turn=turn, seq=i, type=t, payload=p) for i, (t, p) in enumerate(typed, 1)]


START = timezone.now() - timedelta(days=1)  # when add_turn's turns begin, a minute apart


def add_turn(session, index: int, *, status: str = "completed", stopped: bool = False) -> Turn:
    """A turn as a run leaves it: a step, streamed deltas, the reply and the end (or, `stopped`, a step
    cut off mid-stream; or, status running, no end yet)."""
    finished = status != "running"
    answer = f"Answer {index}: revenue rose." if finished else ""
    turn = Turn.objects.create(
        session=session,
        index=index,
        user_message=f"Question {index}",
        mode=session.mode,
        status=status,
        answer=answer if not stopped else "Answer",
        prompt_tokens=100,
        completion_tokens=20,
        step_count=1,
        finished_at=timezone.now() if finished else None,
    )
    Turn.objects.filter(pk=turn.pk).update(created_at=START + timedelta(minutes=index))
    turn.refresh_from_db()
    events = [("turn.started", {"mode": session.mode, "execution": "ask", "max_steps": 1})]
    events.append(("step.started", {"step": 1, "messages_from": 1, "messages": [], "tools": [], "tokens": 300}))
    events += [("model.delta", {"text": f"Answer {index}: "}), ("model.delta", {"text": "revenue rose."})]
    if not stopped and finished:
        events.append(("model.message", {"step": 1, "content": answer, "tool_calls": [], "usage": {}}))
    if finished:
        events.append((f"turn.{'cancelled' if stopped else 'completed'}", {"status": status, "answer": turn.answer}))
    TurnEvent.objects.bulk_create(
        TurnEvent(turn=turn, seq=seq, type=type_, payload=payload) for seq, (type_, payload) in enumerate(events, 1)
    )
    return turn
