"""Reading back what a turn recorded."""

from __future__ import annotations


async def event_types(turn) -> list[str]:
    """The types of the turn's events, in seq order."""
    return [e.type async for e in turn.events.order_by("seq")]


async def events_of(turn, event_type) -> list[dict]:
    """The payloads of the turn's events of one type, in seq order."""
    return [e.payload async for e in turn.events.filter(type=event_type).order_by("seq")]
