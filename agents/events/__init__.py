"""Turn events: typed payloads (payloads.py, the registry of event types), the run's recorder
(recorder.py), the batch writer (writer.py) and the channel-layer side (channel.py)."""

from __future__ import annotations

from .channel import broadcast_written, message_events, session_group
from .payloads import EVENT_PAYLOADS, EVENT_TYPES, FINAL_EVENT_TYPES, live_payload
from .recorder import EventRecorder
from .writer import close_writer_connection

__all__ = [
    "EVENT_PAYLOADS",
    "EVENT_TYPES",
    "FINAL_EVENT_TYPES",
    "EventRecorder",
    "broadcast_written",
    "close_writer_connection",
    "live_payload",
    "message_events",
    "session_group",
]
