"""`/ws/sessions/<id>/`: the live stream of a session's turns, as htmx out-of-band fragments.

Auth and ownership are checked before the socket is accepted or joins the group (the Origin is
checked, port included, by aptix/origins.py); anything else is refused without a word.
Resuming: the client connects with `?turn=<id>&seq=<n>`, the last event its page shows (the page's
`stream-cursor`; the client rewrites the URL on every reconnect). The consumer joins the group
first, then replays from the database every event after that cursor — the rest of that turn and
all of any later turn — then streams live events, skipping any seq it already sent. So a reload
or a reconnect mid-turn sees each event exactly once, in order.
"""

from __future__ import annotations

import logging
from urllib.parse import parse_qs

from asgiref.sync import sync_to_async
from channels.generic.websocket import AsyncWebsocketConsumer

from agents.events import message_events, session_group
from agents.models import AgentSession, Turn, TurnEvent
from agents.sessions import SessionNotFoundError, session_get

from .live import LiveRenderer

logger = logging.getLogger("aptix.stream")


class SessionStreamConsumer(AsyncWebsocketConsumer):
    session: AgentSession | None = None

    async def connect(self) -> None:
        user = self.scope.get("user")
        if user is None or not user.is_authenticated:
            await self.close()
            return
        session_id = self.scope["url_route"]["kwargs"]["session_id"]
        try:
            self.session = await sync_to_async(session_get)(user=user, session_id=session_id)
        except SessionNotFoundError:
            await self.close()
            return
        self.group = session_group(self.session.id)
        self.sent: dict[str, int] = {}  # turn id → highest seq sent on this connection
        self.turns: dict[str, Turn] = {}
        self.renderer = LiveRenderer(self.session)
        await self.channel_layer.group_add(self.group, self.channel_name)
        await self.accept()
        await self._replay(*self._cursor())

    async def disconnect(self, code) -> None:
        if self.session is not None:
            await self.channel_layer.group_discard(self.group, self.channel_name)

    async def receive(self, text_data=None, bytes_data=None) -> None:
        """The stream is one-way; messages from the client are ignored."""

    async def turn_events(self, message: dict) -> None:
        """A batch of live events from the session's group (agents/events.py)."""
        if self.session is None or message.get("session_id") != self.session.id:
            return
        for event in message_events(message):
            await self._send_event(event["turn_id"], event["event"], event["payload"], event["seq"])

    # --- internals ---------------------------------------------------------------------------

    def _cursor(self) -> tuple[str | None, int]:
        query = parse_qs((self.scope.get("query_string") or b"").decode())
        turn_id = (query.get("turn") or [""])[0] or None
        try:
            seq = max(0, int((query.get("seq") or ["0"])[0]))
        except ValueError:
            seq = 0
        return turn_id, seq

    async def _replay(self, turn_id: str | None, seq: int) -> None:
        assert self.session is not None  # connect() replays only after it found the session
        events = await sync_to_async(_events_after)(self.session.id, turn_id, seq)
        for event in events:
            await self._send_event(event.turn_id, event.type, event.payload, event.seq)

    async def _send_event(self, turn_id: str, event_type: str, payload: dict, seq: int) -> None:
        if seq <= self.sent.get(turn_id, 0):
            return  # already sent (replayed, then broadcast again)
        self.sent[turn_id] = seq
        turn = self.turns.get(turn_id)
        if turn is None:
            turn = self.turns[turn_id] = await Turn.objects.aget(pk=turn_id)
        try:
            html = await sync_to_async(self.renderer.render)(turn, event_type, payload, seq)
        except Exception:
            logger.exception("Rendering event %s of turn %s failed", seq, turn_id)
            return
        await self.send(text_data=html)


def _events_after(session_id: str, turn_id: str | None, seq: int) -> list[TurnEvent]:
    """Events the client has not seen: after `seq` in its cursor turn, and all of later turns. Without
    a cursor (a page that showed no turn), every event of the session: its turns all started after
    the page was drawn, and one may have ended before the socket connected (a fast turn, a slow
    network), so it must be replayed even though it is finished."""
    events = TurnEvent.objects.filter(turn__session_id=session_id).order_by("turn__index", "seq")
    cursor = Turn.objects.filter(pk=turn_id, session_id=session_id).values("index").first() if turn_id else None
    if cursor is None:
        return list(events)
    later = events.filter(turn__index__gt=cursor["index"]) | events.filter(turn_id=turn_id, seq__gt=seq)
    return list(later.order_by("turn__index", "seq"))
