"""Turns written straight to the database, as a finished run leaves them, for tests of what is drawn
or done with them afterwards."""

from __future__ import annotations

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
