"""Events of a turn no run holds (so no EventRecorder): a turn ended by a sweep or a cancel, an
approval decided while the turn waits. The one way to write them: checked against the registry,
numbered after the turn's last event in the caller's transaction, broadcast once it commits."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from django.db import transaction
from django.db.models import Max

from ..models import TurnEvent
from .channel import broadcast_written
from .registry import check_payload


def events_append(turn_id: str, session_id: str, events: Sequence[tuple[str, Mapping[str, Any]]]) -> list[TurnEvent]:
    """Write `events` ((type, payload) pairs) after the turn's last one, inside the caller's
    transaction (which should hold the turn's row locked or updated, so no other writer numbers
    events meanwhile); they are broadcast to the session once it commits. An unknown type or a
    malformed payload raises EventPayloadError before anything is written."""
    for event_type, payload in events:
        check_payload(event_type, payload)
    with transaction.atomic():
        seq = TurnEvent.objects.filter(turn_id=turn_id).aggregate(m=Max("seq"))["m"] or 0
        written = [
            TurnEvent.objects.create(turn_id=turn_id, seq=seq + i, type=event_type, payload=dict(payload))
            for i, (event_type, payload) in enumerate(events, start=1)
        ]
        transaction.on_commit(lambda: broadcast_written(session_id, turn_id, written))
    return written
