"""The channel layer side of turn events: a session's group, the message one written batch makes,
and reading it back. The only code that sends turn events to the channel layer."""

from __future__ import annotations

import asyncio
import logging
from datetime import datetime
from typing import Any, TypedDict

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer

from ..models import Turn, TurnEvent
from .registry import live_payload

logger = logging.getLogger("aptix.events")


class LiveEvent(TypedDict):
    seq: int
    event: str  # one of EVENT_TYPES
    payload: dict[str, Any]  # live_payload(): without the trace-only fields
    created_at: str


class TurnEventsMessage(TypedDict, total=False):
    """What goes to a session's group: the events of one written batch, in `seq` order (one message
    per batch, not per event: one channel-layer round trip, to Redis too, instead of dozens). The
    batch that starts a turn carries its row too (`turn`, from `turn_row`), so web processes draw the start
    without reading it back (agents/web/renders.py)."""

    type: str  # "turn.events" → consumer method turn_events
    session_id: str
    turn_id: str
    events: list[LiveEvent]
    turn: dict[str, Any]


# Not sent with a starting turn's row: large, and no fragment shows them.
ROW_LEFT_OUT = frozenset({"trace", "state", "choice"})


def turn_row(turn: Turn) -> dict[str, Any]:
    """The turn's row as the channel layer carries it (msgpack: strings, numbers, None)."""
    return {
        field.attname: _plain(getattr(turn, field.attname))
        for field in Turn._meta.concrete_fields
        if field.name not in ROW_LEFT_OUT
    }


def _plain(value: Any) -> Any:
    return value.isoformat() if isinstance(value, datetime) else value


def turn_from_row(row: dict[str, Any]) -> Turn:
    """The Turn a `turn_row` describes, as if read from the database (without the fields left out)."""
    fields = {field.attname: field for field in Turn._meta.concrete_fields if field.attname in row}
    turn = Turn(**{name: field.to_python(row[name]) for name, field in fields.items()})
    turn._state.adding = False
    turn._state.db = Turn.objects.db
    return turn


def message_events(message: dict) -> list[dict]:
    """The events of a group message, each with its turn and session (for listeners); the first
    event of a starting turn's batch with the turn's row (`turn_row`)."""
    if message.get("type") != "turn.events":
        return []
    events = [
        {"session_id": message["session_id"], "turn_id": message["turn_id"], **event}
        for event in message.get("events", [])
    ]
    if events and message.get("turn"):
        events[0]["turn_row"] = message["turn"]
    return events


def session_group(session_id: str) -> str:
    return f"session_{session_id}"


def session_news_group(session_id: str) -> str:
    """The session's events other than a reply's pieces (model.delta), without payloads: for what
    waits for a turn to end or pause (the JSON API's request, runners.WorkerRunner.wait), which
    received every piece of the reply before, in the web process the request came to."""
    return f"session_news_{session_id}"


def _news(message: TurnEventsMessage) -> TurnEventsMessage | None:
    events: list[LiveEvent] = [
        {**event, "payload": {}} for event in message["events"] if event["event"] != "model.delta"
    ]
    if not events:
        return None
    return {"type": "turn.events", "session_id": message["session_id"], "turn_id": message["turn_id"], "events": events}


def user_group(user_id: Any) -> str:
    """The channel-layer group of every stream one user holds open (agents/web/streams.py)."""
    return f"aptix.user.{user_id}"


MOVED_GATHER = 0.25  # seconds: a burst of one user's turns becomes one note to each of their sockets


class SidebarMoves:
    """ "A session of yours moved up" and "a session of yours was named", gathered per user for
    MOVED_GATHER seconds on the serving event loop: each note goes to every socket of the user, so a
    program posting 100 turns at once while 100 tabs are open sent 10,000 of each (a fifth of the
    sockets' process in the scale-out bench; the titles of 500 new sessions, each sent to the user's
    500 sockets, were 7% of one process at 500 streams); now a few, each listing the sessions in the
    order they moved, or their new names. Without a serving loop (a management command, a test with
    none bound) each note goes at once, as before."""

    def __init__(self) -> None:
        self.loop: asyncio.AbstractEventLoop | None = None
        self._pending: dict[Any, list[str]] = {}
        self._titles: dict[Any, dict[str, str]] = {}

    def bind(self, loop: asyncio.AbstractEventLoop | None) -> None:
        """Gather on `loop` (the serving process's), or stop gathering (None)."""
        self.loop = loop

    def _gathering(self) -> asyncio.AbstractEventLoop | None:
        loop = self.loop
        return loop if loop is not None and loop.is_running() else None

    def moved(self, user_id: Any, session_id: str) -> None:
        """From any thread: the user's session got a new turn."""
        loop = self._gathering()
        if loop is None:
            return _send_moved(user_id, [session_id])
        loop.call_soon_threadsafe(self._gather, user_id, str(session_id))

    def titled(self, user_id: Any, session_id: str, title: str) -> bool:
        """From any thread: the user's session was named. False when nothing gathers (send it now)."""
        loop = self._gathering()
        if loop is None:
            return False
        loop.call_soon_threadsafe(self._gather_title, user_id, str(session_id), title)
        return True

    def _gather(self, user_id: Any, session_id: str) -> None:
        ids = self._pending.setdefault(user_id, [])
        if not ids:
            asyncio.get_running_loop().call_later(MOVED_GATHER, self._flush, user_id)
        if session_id in ids:
            ids.remove(session_id)
        ids.append(session_id)

    def _gather_title(self, user_id: Any, session_id: str, title: str) -> None:
        titles = self._titles.setdefault(user_id, {})
        if not titles:
            asyncio.get_running_loop().call_later(MOVED_GATHER, self._flush_titles, user_id)
        titles[session_id] = title

    def _flush(self, user_id: Any) -> None:
        ids = self._pending.pop(user_id, [])
        if ids:
            asyncio.get_running_loop().create_task(_send_moved_async(user_id, ids))

    def _flush_titles(self, user_id: Any) -> None:
        titles = self._titles.pop(user_id, {})
        if titles:
            asyncio.get_running_loop().create_task(_send_titled(user_id, list(titles.items())))


sidebar_moves = SidebarMoves()


def session_moved(user_id: Any, session_id: str) -> None:
    """Tell every stream of the user that a session got a new turn, so that each tab's sidebar puts it
    first (consumers.py `session_moved`): once per turn at most (gathered: SidebarMoves), never per
    event. A lost message costs only the order until the next page load."""
    sidebar_moves.moved(user_id, session_id)


def _send_moved(user_id: Any, session_ids: list[str]) -> None:
    async_to_sync(_send_moved_async)(user_id, session_ids)


async def _send_moved_async(user_id: Any, session_ids: list[str]) -> None:
    layer = get_channel_layer()
    if layer is None:
        return
    try:
        await layer.group_send(user_group(user_id), {"type": "session.moved", "session_ids": session_ids})
    except Exception:  # the turn must not fail because a broadcast did: a lost note costs only the order
        logger.exception("Could not tell the streams of user %s that sessions %s moved", user_id, session_ids)


async def session_titled(user_id: Any, session_id: str, title: str) -> None:
    """Tell every stream of the user that a session was given a title after its first answer
    (agents/run/titles.py), so that its header and each tab's sidebar show it without a reload
    (consumers.py `session_titled`): gathered with others named meanwhile (SidebarMoves). A lost
    note costs only the name until the next page load."""
    if not sidebar_moves.titled(user_id, session_id, title):
        await _send_titled(user_id, [(session_id, title)])


async def _send_titled(user_id: Any, titles: list[tuple[str, str]]) -> None:
    layer = get_channel_layer()
    if layer is None:
        return
    note = {"type": "session.titled", "titles": [[session_id, title] for session_id, title in titles]}
    try:
        await layer.group_send(user_group(user_id), note)
    except Exception:  # the title is written: a lost note must not fail the task that wrote it
        logger.exception("Could not tell the streams of user %s that sessions were titled", user_id)


def events_message(
    session_id: str, turn_id: str, events: list[TurnEvent], row: dict[str, Any] | None = None
) -> TurnEventsMessage:
    message: TurnEventsMessage = {
        "type": "turn.events",
        "session_id": session_id,
        "turn_id": turn_id,
        "events": [
            {
                "seq": event.seq,
                "event": event.type,
                "payload": live_payload(event.payload, event.type),
                "created_at": event.created_at.isoformat(),
            }
            for event in events
        ],
    }
    if row is not None:
        message["turn"] = row
    return message


def broadcast_written(session_id: str, turn_id: str, events: list[TurnEvent]) -> None:
    """From synchronous code: send events already written (outside a run, e.g. an orphaned turn
    ended by a sweep) to the session's group."""
    layer = get_channel_layer()
    if layer is None:
        return
    message = events_message(session_id, turn_id, events)
    try:
        async_to_sync(layer.group_send)(session_group(session_id), message)
        if news := _news(message):
            async_to_sync(layer.group_send)(session_news_group(session_id), news)
    except Exception:
        logger.exception("Broadcasting events of turn %s failed", turn_id)


async def send_events(
    layer: Any, session_id: str, turn_id: str, events: list[TurnEvent], row: dict[str, Any] | None = None
) -> None:
    """From a run: send a written batch to the session's group. A failure is logged, not raised:
    the events are persisted, and a live-stream hiccup must not kill the run."""
    if layer is None:
        return
    message = events_message(session_id, turn_id, events, row)
    try:
        await layer.group_send(session_group(session_id), message)
        if news := _news(message):
            await layer.group_send(session_news_group(session_id), news)
    except Exception:
        logger.exception("Broadcasting events %s-%s of turn %s failed", events[0].seq, events[-1].seq, turn_id)
