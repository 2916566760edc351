"""Turn events: the registry of event types (registry.py) and their typed payloads (payloads.py),
the run's recorder (recorder.py), the batch writer (writer.py), writes outside a run (append.py)
and the channel-layer side (channel.py)."""

from __future__ import annotations

from .append import events_append
from .channel import broadcast_written, message_events, session_group, session_news_group, sidebar_moves
from .recorder import EventRecorder
from .registry import (
    EVENT_PAYLOADS,
    EVENT_TYPES,
    EVENTS,
    FINAL_EVENT_TYPES,
    EventPayloadError,
    EventType,
    check_payload,
    live_payload,
)
from .writer import close_writer_connection

__all__ = [
    "EVENTS",
    "EVENT_PAYLOADS",
    "EVENT_TYPES",
    "FINAL_EVENT_TYPES",
    "EventPayloadError",
    "EventRecorder",
    "EventType",
    "broadcast_written",
    "check_payload",
    "close_writer_connection",
    "events_append",
    "live_payload",
    "message_events",
    "session_group",
    "session_news_group",
    "sidebar_moves",
]
