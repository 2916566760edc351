"""Turn events: written as TurnEvent rows (with a per-turn `seq`), *then* sent to the session's
channel-layer group. The only module that talks to the channel layer for turns."""
from __future__ import annotations

import logging
import time
from typing import Any, TypedDict

from channels.layers import get_channel_layer
from django.db.models import Max

from .models import TurnEvent

logger = logging.getLogger("aptix.events")

EVENT_TYPES = (
    "turn.started", "step.started", "model.delta", "model.message", "tool.called", "tool.result",
    "mode.changed", "limit.reached", "turn.completed", "turn.failed", "turn.cancelled",
)
FINAL_EVENT_TYPES = frozenset({"turn.completed", "turn.failed", "turn.cancelled", "limit.reached"})
DELTA_INTERVAL = 0.05  # seconds: token deltas are coalesced to about one event per 50 ms


class TurnEventMessage(TypedDict):
    type: str  # "turn.event" → consumer method turn_event
    session_id: str
    turn_id: str
    seq: int
    event: str
    payload: dict[str, Any]
    created_at: str


def session_group(session_id: str) -> str:
    return f"session_{session_id}"


class EventRecorder:
    """Records and broadcasts the events of one turn."""

    def __init__(self, turn, *, start_seq: int = 0, channel_layer=None) -> None:
        self.turn_id = turn.id
        self.session_id = turn.session_id
        self.seq = start_seq
        self._layer = channel_layer if channel_layer is not None else get_channel_layer()
        self._pending_delta = ""
        self._last_flush = 0.0

    @classmethod
    async def for_turn(cls, turn, **kwargs) -> "EventRecorder":
        last = await TurnEvent.objects.filter(turn_id=turn.id).aaggregate(m=Max("seq"))
        return cls(turn, start_seq=last["m"] or 0, **kwargs)

    async def emit(self, event_type: str, payload: dict[str, Any] | None = None) -> TurnEvent:
        if event_type not in EVENT_TYPES:
            raise ValueError(f"Unknown event type {event_type!r}.")
        if event_type != "model.delta":
            await self.flush_delta()
        self.seq += 1
        event = await TurnEvent.objects.acreate(
            turn_id=self.turn_id, seq=self.seq, type=event_type, payload=payload or {}
        )
        await self._broadcast(event)
        return event

    async def delta(self, text: str) -> None:
        """Buffer a token delta; emit when ~50 ms passed since the last one."""
        self._pending_delta += text
        now = time.monotonic()
        if now - self._last_flush >= DELTA_INTERVAL:
            await self.flush_delta()

    async def flush_delta(self) -> None:
        if not self._pending_delta:
            return
        text, self._pending_delta = self._pending_delta, ""
        self._last_flush = time.monotonic()
        await self.emit("model.delta", {"text": text})

    async def _broadcast(self, event: TurnEvent) -> None:
        if self._layer is None:
            return
        message: TurnEventMessage = {
            "type": "turn.event",
            "session_id": self.session_id,
            "turn_id": self.turn_id,
            "seq": event.seq,
            "event": event.type,
            "payload": event.payload,
            "created_at": event.created_at.isoformat(),
        }
        try:
            await self._layer.group_send(session_group(self.session_id), message)
        except Exception:  # noqa: BLE001 - the event is persisted; a live-stream hiccup must not kill the run
            logger.exception("Broadcasting event %s of turn %s failed", event.seq, self.turn_id)
