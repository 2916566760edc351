"""`/ws/sessions/<id>/`: the live stream of a session's turns, as htmx out-of-band fragments.

Auth and ownership are checked before the socket is accepted or joins the group (the Origin is
checked, port included, by aptix/origins.py); anything else is refused without a word.
Resuming: the client connects with `?turn=<id>&seq=<n>`, the last event its page shows (the page's
`stream-cursor`; the client rewrites the URL on every reconnect). The consumer joins the group
first, then replays from the database every event after that cursor — the rest of that turn and
all of any later turn — then streams live events, skipping any seq it already sent. So a reload
or a reconnect mid-turn sees each event exactly once, in order. A socket without a cursor (not from
a session page) gets only the open turns; a replay is bounded, a page too far behind is told to
reload; sockets are capped per user and per session; a socket closes when its user's access ends
(all in agents/web/streams.py).
"""

from __future__ import annotations

import asyncio
import logging
from typing import NamedTuple
from urllib.parse import parse_qs

from asgiref.sync import sync_to_async
from channels.generic.websocket import AsyncWebsocketConsumer
from django.conf import settings
from django.template.loader import render_to_string

from agents.events import message_events, session_group
from agents.models import AgentSession, Turn, TurnEvent
from agents.sessions import SessionNotFoundError, session_get

from .live import LiveRenderer
from .renders import release, renders_for
from .streams import CLOSE_ACCESS_LOST, CLOSE_TOO_BIG, CLOSE_TOO_MANY, open_streams, still_allowed, user_group

logger = logging.getLogger("aptix.stream")


class Cursor(NamedTuple):
    """Where the page's stream stands: after event `seq` of `turn_id` ("" when the page showed no
    turn: before every turn)."""

    turn_id: str
    seq: int


class SessionStreamConsumer(AsyncWebsocketConsumer):
    session: AgentSession | None = None
    closed = False

    async def connect(self) -> None:
        user = self.scope.get("user")
        if user is None or not user.is_authenticated:
            await self.close()
            return
        session_id = self.scope["url_route"]["kwargs"]["session_id"]
        try:
            session = await sync_to_async(session_get)(user=user, session_id=session_id)
        except SessionNotFoundError:
            await self.close()
            return
        refused = open_streams.admit(self, user_id=user.pk, session_id=session.id)
        if refused:
            logger.info("Stream refused: %s", refused, extra={"event": "stream.refused", "session_id": session.id})
            await self.accept()
            await self._close(CLOSE_TOO_MANY)
            return
        self.session, self.user_id = session, user.pk
        self.group = session_group(session.id)
        self.sent: dict[str, int] = {}  # turn id → highest seq sent on this connection
        self.turns: dict[str, Turn] = {}
        self.renderer = LiveRenderer(session)  # this socket's replay
        self.shared = renders_for(session)  # live events: rendered once for every socket of the session here
        await self.channel_layer.group_add(self.group, self.channel_name)
        await self.channel_layer.group_add(user_group(user.pk), self.channel_name)
        await self.accept()
        self.rechecks = asyncio.create_task(self._recheck_forever())
        await self._replay(self._cursor())

    async def disconnect(self, code) -> None:
        self.closed = True
        if self.session is not None:
            self.rechecks.cancel()
            release(self.shared)
            open_streams.release(self, user_id=self.user_id, session_id=self.session.id)
            await self.channel_layer.group_discard(self.group, self.channel_name)
            await self.channel_layer.group_discard(user_group(self.user_id), self.channel_name)

    async def receive(self, text_data=None, bytes_data=None) -> None:
        """The stream is one-way: a message from the client is ignored, an oversized one closes it."""
        if len(text_data or bytes_data or "") > settings.APTIX_WS_MAX_MESSAGE:
            await self._close(CLOSE_TOO_BIG)

    async def dispatch(self, message: dict) -> None:
        """Channels runs `close_old_connections` on asgiref's one sync thread before every message
        it hands a consumer: a trip through the queue of every ORM call in the process. Live
        events need no connection of that thread (their renders have a thread of their own,
        renders.py), so they skip it; twenty turns starting at once had each turn's first token
        wait behind the others' run and history loads there (issue 17)."""
        if message.get("type") == "turn.events":
            await self.turn_events(message)
        else:
            await super().dispatch(message)

    async def turn_events(self, message: dict) -> None:
        """A batch of live events from the session's group (agents/events.py)."""
        if self.session is None or message.get("session_id") != self.session.id:
            return
        for event in message_events(message):
            turn_id, seq = event["turn_id"], event["seq"]
            if self.closed:
                return
            try:  # every event, even one already replayed here: the shared renderer follows the turn
                html = await self.shared.render(turn_id, event["event"], event["payload"], seq)
            except Exception:
                logger.exception("Rendering event %s of turn %s failed", seq, turn_id)
                continue
            if seq > self.sent.get(turn_id, 0):
                self.sent[turn_id] = seq
                await self.send(text_data=html)

    async def access_check(self, message: dict) -> None:
        """From the user's group: their access may have changed (agents/web/streams.py)."""
        ended = message.get("ended_session")
        if (ended and ended == self._login_key()) or not await self._allowed():
            await self._close(CLOSE_ACCESS_LOST)

    # --- internals ---------------------------------------------------------------------------

    def _login_key(self) -> str | None:
        login = self.scope.get("session")
        return getattr(login, "session_key", None)

    async def _allowed(self) -> bool:
        assert self.session is not None
        return await sync_to_async(still_allowed)(
            user_id=self.user_id, session_key=self._login_key(), session_id=self.session.id
        )

    async def _recheck_forever(self) -> None:
        while not self.closed:
            await asyncio.sleep(settings.APTIX_WS_RECHECK)
            if not self.closed and not await self._allowed():
                await self._close(CLOSE_ACCESS_LOST)

    async def _close(self, code: int) -> None:
        if not self.closed:
            self.closed = True
            await self.close(code=code)

    def _cursor(self) -> Cursor | None:
        """The page's cursor (`?turn=<id>&seq=<n>`; `turn` empty: the page showed no turn), or None
        when the socket did not come from a session page."""
        query = parse_qs((self.scope.get("query_string") or b"").decode(), keep_blank_values=True)
        if "seq" not in query:
            return None
        try:
            seq = max(0, int(query["seq"][0]))
        except ValueError:
            seq = 0
        return Cursor((query.get("turn") or [""])[0], seq)

    async def _replay(self, cursor: Cursor | None) -> None:
        assert self.session is not None  # connect() replays only after it found the session
        limit = settings.APTIX_WS_REPLAY_MAX
        events = await sync_to_async(_events_after)(self.session.id, cursor, limit + 1)
        if len(events) > limit:
            logger.info("Replay of more than %d events refused", limit, extra={"event": "stream.stale"})
            await self.send(text_data=render_to_string("agents/_stream_notice.html", {"reason": "stale"}))
            return
        for event in events:
            if self.closed:
                return
            await self._replay_event(event.turn_id, event.type, event.payload, event.seq)

    async def _replay_event(self, turn_id: str, event_type: str, payload: dict, seq: int) -> None:
        if self.closed or seq <= self.sent.get(turn_id, 0):
            return  # closed, or already sent (replayed, then broadcast again)
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


def _events_after(session_id: str, cursor: Cursor | None, limit: int) -> list[TurnEvent]:
    """At most `limit` events the client has not seen: after the cursor's `seq` in its turn, and all
    of later turns. A page that showed no turn gets every event of the session: its turns all started
    after the page was drawn, and one may have ended before the socket connected (a fast turn, a slow
    network), so it must be replayed even though it is finished. Without a cursor, only the events of
    the turns still open."""
    events = TurnEvent.objects.filter(turn__session_id=session_id).order_by("turn__index", "seq")
    if cursor is None:
        events = events.filter(turn__finished_at__isnull=True)
    elif cursor.turn_id:
        index = Turn.objects.filter(pk=cursor.turn_id, session_id=session_id).values_list("index", flat=True).first()
        if index is not None:
            later = events.filter(turn__index__gt=index) | events.filter(turn_id=cursor.turn_id, seq__gt=cursor.seq)
            events = later.order_by("turn__index", "seq")
    return list(events[:limit])
