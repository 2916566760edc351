"""Turn events: written as TurnEvent rows (with a per-turn `seq`), *then* sent to the session's
channel-layer group. The only module that talks to the channel layer for turns."""
from __future__ import annotations

import asyncio
import logging
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypedDict

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.db import connections, transaction
from django.db.models import Max, Q
from django.db.models.sql import UpdateQuery
from django.utils import timezone

from .models import Turn, TurnEvent

logger = logging.getLogger("aptix.events")

EVENT_TYPES = (
    "turn.started", "step.started", "model.delta", "model.message", "tool.called", "tool.result",
    "mode.changed", "limit.reached", "turn.completed", "turn.failed", "turn.cancelled",
)
FINAL_EVENT_TYPES = frozenset({"turn.completed", "turn.failed", "turn.cancelled", "limit.reached"})
# Trace-only payload fields (the prompt and messages sent, the tool schemas): kept in the TurnEvent
# for the admin's trace, not streamed to browsers (smaller messages, and prompts stay server-side).
TRACE_ONLY_FIELDS = frozenset({"system_prompt", "messages", "tools"})
DELTA_INTERVAL = 0.05  # seconds: token deltas are coalesced to about one event per 50 ms
# Seconds between two event transactions of a turn: what is handed over meanwhile waits and goes in
# the next one. A turn whose steps take longer (any real model) still writes every event as it comes;
# a fast one writes a batch per window instead of a transaction per event (each costs the run a
# thread hop and GIL hand-overs). The stream is therefore at most this much behind the run.
WRITE_INTERVAL = 0.05


class LiveEvent(TypedDict):
    seq: int
    event: str  # one of EVENT_TYPES
    payload: dict[str, Any]  # live_payload(): without the trace-only fields
    created_at: str


class TurnEventsMessage(TypedDict):
    """What goes to a session's group: the events of one written batch, in `seq` order (one message
    per batch, not per event: one channel-layer round trip, to Redis too, instead of dozens)."""

    type: str  # "turn.events" → consumer method turn_events
    session_id: str
    turn_id: str
    events: list[LiveEvent]


def message_events(message: dict) -> list[dict]:
    """The events of a group message, each with its turn and session (for listeners)."""
    if message.get("type") != "turn.events":
        return []
    return [{"session_id": message["session_id"], "turn_id": message["turn_id"], **event}
            for event in message.get("events", [])]


def live_payload(payload: dict[str, Any]) -> dict[str, Any]:
    """What of an event's payload goes to the live stream (and to replays)."""
    if TRACE_ONLY_FIELDS.isdisjoint(payload):
        return payload
    return {k: v for k, v in payload.items() if k not in TRACE_ONLY_FIELDS}


def session_group(session_id: str) -> str:
    return f"session_{session_id}"


class EventRecorder:
    """Records and broadcasts the events of one turn.

    Writing is behind the run, in order: `emit` queues the event and hands everything queued to
    the turn's writer task. The writer has one transaction in flight at a time; each takes all that
    was handed over meanwhile (group commit) together with the turn row's columns given with it,
    and starts at most every WRITE_INTERVAL unless the run is draining. Once written, the batch is
    broadcast as one group message, so the stream never sees an event before the database has it,
    nor out of order. The run does not wait for the database between steps: it waits once, in
    `drain()`, before it returns. `emit(..., defer=True)` only queues (the next emit takes it
    along), for an event that another follows at once. A cancelled run cannot lose events: the
    writer is not the run's task.
    """

    def __init__(self, turn, *, start_seq: int = 0, channel_layer=None) -> None:
        self.turn_id = turn.id
        self.session_id = turn.session_id
        self.seq = start_seq
        self._layer = channel_layer if channel_layer is not None else get_channel_layer()
        self._queue: list[TurnEvent] = []  # emitted, not yet handed to the writer (deferred)
        self._handed: list[TurnEvent] = []  # handed to the writer, not yet taken by it
        self._queue_fields: dict[str, Any] = {}  # the turn row's columns given with the queued events
        self._handed_fields: dict[str, Any] = {}  # ... and with the handed ones
        self._writer: asyncio.Task | None = None  # the writer, while it has work
        self._urgent = asyncio.Event()  # set by drain(): write what is handed without waiting
        self._last_write = 0.0  # loop time the last transaction started
        self.streamed = ""  # the text of the reply being streamed (kept if the run is stopped)
        self._error: BaseException | None = None
        self._pending_delta = ""
        self._last_flush = 0.0

    @classmethod
    async def for_turn(cls, turn, **kwargs) -> EventRecorder:
        last = await TurnEvent.objects.filter(turn_id=turn.id).aaggregate(m=Max("seq"))
        return cls(turn, start_seq=last["m"] or 0, **kwargs)

    async def emit(self, event_type: str, payload: dict[str, Any] | None = None, *, defer: bool = False,
                   turn_fields: dict[str, Any] | None = None) -> TurnEvent:
        """Record an event. `turn_fields` are columns of the turn's own row, written in the same
        transaction as the events, so the turn and its events never disagree (a later value of a
        column replaces one not written yet)."""
        if event_type not in EVENT_TYPES:
            raise ValueError(f"Unknown event type {event_type!r}.")
        if event_type != "model.delta":
            self._queue_delta()  # a buffered delta goes out with the event that follows it
        if event_type == "model.message":
            self.streamed = ""
        event = self._queue_event(event_type, payload or {})
        if turn_fields:
            self._queue_fields.update(turn_fields)
        if not defer:
            await self.flush()
        return event

    async def delta(self, text: str) -> None:
        """Buffer a token delta; emit when ~50 ms passed since the last one."""
        self._pending_delta += text
        self.streamed += text
        now = time.monotonic()
        if now - self._last_flush >= DELTA_INTERVAL:
            await self.flush_delta()

    async def flush_delta(self) -> None:
        if self._queue_delta():
            await self.flush()

    async def flush(self) -> None:
        """Hand the queued events to the writer (returns at once; see `drain`)."""
        if not self._queue:
            return
        self._handed += self._queue
        self._handed_fields.update(self._queue_fields)
        self._queue, self._queue_fields = [], {}
        if self._writer is None or self._writer.done():
            self._writer = asyncio.get_running_loop().create_task(self._write_then_send())

    async def drain(self) -> None:
        """Wait until every event emitted so far is written and broadcast; raise the first write error."""
        await self.flush()
        self._urgent.set()
        try:
            while self._writer is not None and not self._writer.done():
                await asyncio.shield(self._writer)
        finally:
            self._urgent.clear()
        if self._error is not None:
            error, self._error = self._error, None
            raise error

    async def _write_then_send(self) -> None:
        """Group commit: one transaction at a time, each taking everything handed over meanwhile, so
        a fast run writes a few larger batches instead of one transaction per event."""
        loop = asyncio.get_running_loop()
        while self._handed:
            wait = self._last_write + WRITE_INTERVAL - loop.time()
            if wait > 0 and not self._urgent.is_set():
                try:
                    async with asyncio.timeout(wait):
                        await self._urgent.wait()
                except TimeoutError:
                    pass
            self._last_write = loop.time()
            events, fields = self._handed, self._handed_fields
            self._handed, self._handed_fields = [], {}
            try:
                await _write(self.turn_id, events, fields)
            except Exception as exc:  # noqa: BLE001 - surfaced by drain(); later batches still try
                logger.exception("Writing events %s-%s of turn %s failed",
                                 events[0].seq, events[-1].seq, self.turn_id)
                self._error = self._error or exc
                continue
            await self._broadcast(events)

    def _queue_delta(self) -> bool:
        if not self._pending_delta:
            return False
        text, self._pending_delta = self._pending_delta, ""
        self._last_flush = time.monotonic()
        self._queue_event("model.delta", {"text": text})
        return True

    def _queue_event(self, event_type: str, payload: dict[str, Any]) -> TurnEvent:
        self.seq += 1
        event = TurnEvent(turn_id=self.turn_id, seq=self.seq, type=event_type, payload=payload,
                          created_at=timezone.now())
        self._queue.append(event)
        return event

    async def _broadcast(self, events: list[TurnEvent]) -> None:
        if self._layer is None:
            return
        try:
            await self._layer.group_send(session_group(self.session_id),
                                         events_message(self.session_id, self.turn_id, events))
        except Exception:  # noqa: BLE001 - the events are persisted; a live-stream hiccup must not kill the run
            logger.exception("Broadcasting events %s-%s of turn %s failed", events[0].seq, events[-1].seq,
                             self.turn_id)


def events_message(session_id: str, turn_id: str, events: list[TurnEvent]) -> TurnEventsMessage:
    return {
        "type": "turn.events",
        "session_id": session_id,
        "turn_id": turn_id,
        "events": [{"seq": event.seq, "event": event.type, "payload": live_payload(event.payload),
                    "created_at": event.created_at.isoformat()} for event in events],
    }


def broadcast_written(session_id: str, turn_id: str, events: list[TurnEvent]) -> None:
    """From synchronous code: send events already written (outside a run, e.g. an orphaned turn
    ended by a sweep) to the session's group."""
    layer = get_channel_layer()
    if layer is None:
        return
    try:
        async_to_sync(layer.group_send)(session_group(session_id), events_message(session_id, turn_id, events))
    except Exception:  # noqa: BLE001 - the events are persisted; the page shows them on reload
        logger.exception("Broadcasting events of turn %s failed", turn_id)


# Event writes run on a thread of their own, not on asgiref's shared sync thread, which every async
# view's ORM call and every tool's database read in this process queue on: a turn's writes hold up
# neither other requests nor its own tool calls. One thread (so one database connection, kept open
# like the sync thread's) serves all turns of the process; each turn's writer has one batch in flight.
_executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="aptix-events")


async def _write(turn_id: str, events: list[TurnEvent], turn_fields: dict[str, Any]) -> None:
    await asyncio.get_running_loop().run_in_executor(_executor, _write_sync, turn_id, events, turn_fields)


def close_writer_connection() -> None:
    """Close the event thread's database connection (test teardown; it reopens when needed)."""
    _executor.submit(connections.close_all).result(timeout=10)


def _write_sync(turn_id: str, events: list[TurnEvent], turn_fields: dict[str, Any]) -> None:
    try:
        _write_batch(turn_id, events, turn_fields)
    except Exception:
        # A broken connection (the server restarted) must not fail every later batch: drop it, the
        # next batch connects afresh.
        connections.close_all()
        raise


_INSERT_COLUMNS = ("turn_id", "seq", "type", "payload", "created_at")
_ROWS_PER_STATEMENT = 200  # 5 parameters a row: far below every backend's parameter limit


def _write_batch(turn_id: str, events: list[TurnEvent], turn_fields: dict[str, Any]) -> None:
    """The turn's columns and the events, atomically, in as few round trips as the backend allows:
    on PostgreSQL one statement (`WITH turn AS (UPDATE …) INSERT … VALUES (…), (…)`, atomic by
    itself), elsewhere one transaction of an UPDATE and a multi-row INSERT.

    A fast run's writes compete with it for the GIL at every round trip, hence one statement. And
    not `bulk_create`: on PostgreSQL it sends the rows as typed arrays (`UNNEST`), which psycopg
    builds by escaping each JSON payload character by character, costing more CPU than the rest of
    the run's bookkeeping together. Values still go through each field's own database preparation
    (JSON adaptation, time zones), and the UPDATE is compiled by the ORM."""
    connection = connections[TurnEvent.objects.db]
    statements = _insert_statements(connection, events)
    update = _update_statement(connection, turn_id, turn_fields) if turn_fields else None
    if connection.vendor == "postgresql" and update is not None and len(statements) == 1:
        (sql, params), (update_sql, update_params) = statements[0], update
        with connection.cursor() as cursor:
            cursor.execute(f"WITH turn_update AS ({update_sql}) {sql}", (*update_params, *params))
        return
    with transaction.atomic(using=connection.alias), connection.cursor() as cursor:
        for sql, params in ([update] if update else []) + statements:
            cursor.execute(sql, params)


def _insert_statements(connection, events: list[TurnEvent]) -> list[tuple[str, list]]:
    fields = [TurnEvent._meta.get_field(name) for name in _INSERT_COLUMNS]
    quote = connection.ops.quote_name
    head = (f"INSERT INTO {quote(TurnEvent._meta.db_table)} "
            f"({', '.join(quote(field.column) for field in fields)}) VALUES ")
    row = "(" + ", ".join(["%s"] * len(fields)) + ")"
    statements = []
    for start in range(0, len(events), _ROWS_PER_STATEMENT):
        chunk = events[start:start + _ROWS_PER_STATEMENT]
        params = [field.get_db_prep_save(getattr(event, field.attname), connection)
                  for event in chunk for field in fields]
        statements.append((head + ", ".join([row] * len(chunk)), params))
    return statements


def _update_statement(connection, turn_id: str, turn_fields: dict[str, Any]) -> tuple[str, tuple]:
    query = UpdateQuery(Turn)
    query.add_q(Q(pk=turn_id))
    query.add_update_values(turn_fields)
    return query.get_compiler(connection=connection).as_sql()
