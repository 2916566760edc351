"""The EventRecorder: a run's events, written as TurnEvent rows (with a per-turn `seq`), *then*
sent to the session's channel-layer group."""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from collections.abc import Callable, Mapping
from typing import Any

from channels.layers import get_channel_layer
from django.utils import timezone

from ..models import Turn, TurnEvent
from . import pacing
from .channel import send_events, turn_row
from .registry import check_payload
from .writer import TurnWrite, submit_events

logger = logging.getLogger("aptix.events")

# Token deltas are coalesced as pacing.py says (first at once, then an interval that grows with the
# reply's age and the process's load). Kept here too for the benchmarks that import them.
DELTA_INTERVAL, DELTA_INTERVAL_LONG, DELTA_FAST_SECONDS = (
    pacing.DELTA_INTERVAL,
    pacing.DELTA_INTERVAL_LONG,
    pacing.DELTA_FAST_SECONDS,
)
# Seconds between two event transactions of a turn: what is handed over meanwhile waits and goes in
# the next one. A turn whose steps take longer (any real model) still writes every event as it comes;
# a fast one writes a batch per window instead of a transaction per event (each costs the run a
# thread hop and GIL hand-overs). The stream is therefore at most this much behind the run.
WRITE_INTERVAL = 0.05


class EventRecorder:
    """Records and broadcasts the events of one turn.

    Writing is behind the run, in order: `emit` queues the event and hands everything queued to
    the turn's writer task. The writer has one batch in flight at a time; each takes all that
    was handed over meanwhile (group commit) together with the turn row's columns given with it,
    and starts at most every WRITE_INTERVAL unless the run is draining. A reply's first delta
    does not wait for the batch in flight: it is handed to the events thread at once and goes in
    the transaction after it (the thread writes in the order it is handed batches). Once written,
    each batch is broadcast as one group message, in order, so the stream never sees an event
    before the database has it, nor out of order. The run does not wait for the database between
    steps: it waits once, in `drain()`, before it returns. `emit(..., defer=True)` only queues
    (the next emit takes it along), for an event that another follows at once. A cancelled run
    cannot lose events: the writer is not the run's task.
    """

    def __init__(self, turn: Turn, *, start_seq: int = 0, channel_layer: Any = None) -> None:
        self.turn_id = turn.id
        self._row = turn_row(turn) if start_seq == 0 else None  # sent with the batch that starts the turn
        self.session_id = turn.session_id
        self.seq = start_seq
        self._layer = channel_layer if channel_layer is not None else get_channel_layer()
        self._queue: list[TurnEvent] = []  # emitted, not yet handed to the writer (deferred)
        self._handed: list[TurnEvent] = []  # handed to the writer, not yet taken by it
        self._queue_write = TurnWrite()  # the turn row's columns given with the queued events
        self._handed_write = TurnWrite()  # ... and with the handed ones
        self._writer: asyncio.Task | None = None  # the writer, while it has work
        # Batches handed to the events thread, in seq order, until written and broadcast.
        self._in_flight: deque[tuple[list[TurnEvent], asyncio.Future]] = deque()
        self._urgent = asyncio.Event()  # set by drain(): write what is handed without waiting
        self._wake = asyncio.Event()  # ends the writer's pause between transactions (drain, a first delta)
        self._last_write = 0.0  # loop time the last transaction started
        self.streamed = ""  # the text of the reply being streamed (kept if the run is stopped)
        self.first_token: Callable[[], None] | None = None  # told of the run's first answer text (metrics)
        self._error: BaseException | None = None
        self._pending_delta = ""
        self._last_flush = 0.0
        self._stream_started: float | None = None  # when the current reply's first delta came
        self._hurry = False  # a reply's first delta is handed over: write it without the pause

    async def emit(
        self,
        event_type: str,
        payload: Mapping[str, Any] | None = None,
        *,
        defer: bool = False,
        turn_write: TurnWrite | None = None,
    ) -> TurnEvent:
        """Record an event. `turn_write` holds columns of the turn's own row (built by
        agents/turns.py), written in the same transaction as the events, so the turn and its events
        never disagree (a later value of a column replaces one not written yet). An unknown type or
        a malformed payload raises EventPayloadError here, before anything is queued."""
        payload = dict(payload or {})
        check_payload(event_type, payload)
        if event_type != "model.delta":
            self._queue_delta()  # a buffered delta goes out with the event that follows it
        if event_type in ("model.message", "model.retry"):
            self.streamed = ""
            self._stream_started = None  # the next reply starts fast again
            pacing.streaming.ended(self)
        event = self._queue_event(event_type, payload)
        if turn_write is not None:
            self._queue_write.merge(turn_write)
        if not defer:
            await self.flush()
        return event

    async def delta(self, text: str) -> None:
        """Buffer a token delta; emit it as pacing.py's policy says (a reply's first at once)."""
        self._pending_delta += text
        self.streamed += text
        now = time.monotonic()
        if self._stream_started is None:
            self._stream_started = now
            pacing.streaming.started(self)
            if self.first_token is not None:
                self.first_token()
            self._hurry = True  # the answer visibly starts at once, not a write interval later
            self._wake.set()  # ...even if the writer is pausing after the previous transaction
            await self.flush_delta()
            return
        interval = pacing.delta_interval(
            since_start=now - self._stream_started, streams=len(pacing.streaming), backlog=self._backlog()
        )
        if now - self._last_flush >= interval:
            await self.flush_delta()

    def _backlog(self) -> int:
        """Batches handed to the writer that wait for its transaction in flight (0 or 1: it takes
        them all next): the database is behind. (Not those waiting out the writer's pause.)"""
        return 1 if self._in_flight and self._handed else 0

    async def flush_delta(self) -> None:
        if self._queue_delta():
            await self.flush()

    async def flush(self) -> None:
        """Hand the queued events to the writer (returns at once; see `drain`)."""
        if not self._queue:
            return
        self._handed += self._queue
        self._handed_write.merge(self._queue_write)
        self._queue, self._queue_write = [], TurnWrite()
        if self._hurry and self._in_flight:
            # A reply's first delta: to the events thread now, for the transaction after the one in
            # flight, instead of once that one is back on this loop (behind every other turn's work).
            self._submit()
        if self._writer is None or self._writer.done():
            self._writer = asyncio.get_running_loop().create_task(self._write_then_send())

    async def drain(self) -> None:
        """Wait until every event emitted so far is written and broadcast; raise the first write error."""
        await self.flush()
        pacing.streaming.ended(self)  # the run is ending: its reply no longer streams
        self._urgent.set()
        self._wake.set()
        try:
            while self._writer is not None and not self._writer.done():
                await asyncio.shield(self._writer)
        finally:
            self._urgent.clear()
        if self._error is not None:
            error, self._error = self._error, None
            raise error

    async def _write_then_send(self) -> None:
        """Group commit: one batch at a time (but a first delta: `flush`), each taking everything
        handed over meanwhile, so a fast run writes a few larger batches instead of one transaction
        per event. Each written batch is broadcast in turn."""
        loop = asyncio.get_running_loop()
        while self._handed or self._in_flight:
            if not self._in_flight:
                wait = self._last_write + WRITE_INTERVAL - loop.time()
                if wait > 0 and not self._urgent.is_set() and not self._hurry:
                    self._wake.clear()
                    try:
                        async with asyncio.timeout(wait):
                            await self._wake.wait()
                    except TimeoutError:
                        pass
                self._submit()
            events, written = self._in_flight[0]
            try:
                await written
            except Exception as exc:
                logger.exception("Writing events %s-%s of turn %s failed", events[0].seq, events[-1].seq, self.turn_id)
                self._error = self._error or exc
                continue
            finally:
                self._in_flight.popleft()
            row = self._row if events[0].seq == 1 else None
            await send_events(self._layer, self.session_id, self.turn_id, events, row)

    def _submit(self) -> None:
        """Hand what was handed over (and its turn columns) to the events thread as one batch."""
        self._last_write = asyncio.get_running_loop().time()
        self._hurry = False
        events, write = self._handed, self._handed_write
        self._handed, self._handed_write = [], TurnWrite()
        self._in_flight.append((events, submit_events(self.turn_id, events, write)))

    def _queue_delta(self) -> bool:
        if not self._pending_delta:
            return False
        text, self._pending_delta = self._pending_delta, ""
        self._last_flush = time.monotonic()
        self._queue_event("model.delta", {"text": text})  # built here, so not checked: the hot path
        return True

    def _queue_event(self, event_type: str, payload: dict[str, Any]) -> TurnEvent:
        self.seq += 1
        event = TurnEvent(
            turn_id=self.turn_id, seq=self.seq, type=event_type, payload=payload, created_at=timezone.now()
        )
        self._queue.append(event)
        return event
