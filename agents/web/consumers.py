"""`/ws/sessions/<id>/`: the live stream of a session's turns, as htmx out-of-band fragments.

Auth and access (the owner's, or a teammate's of a session shared with the team: a read-only view,
drawn without buttons) are checked before the socket is accepted or joins the group (the Origin is
checked, port included, by aptix/origins.py); anything else is refused without a word.
Resuming: the client connects with `?turn=<id>&seq=<n>`, the last event its page shows (the page's
`stream-cursor`; the client rewrites the URL on every reconnect). The consumer joins the group
first, then replays from the database every event after that cursor — the rest of that turn and
all of any later turn — then streams live events, skipping any seq it already sent. So a reload
or a reconnect mid-turn sees each event exactly once, in order. A live event that skips seqs (a
message the channel layer lost, a rendering that failed) has the missing events sent from the
database first; a turn that has been quiet for `APTIX_WS_CATCHUP` seconds is looked up there too,
in case its end was lost. A socket without a cursor (not from
a session page) gets only the open turns; a replay is bounded, a page too far behind is told to
reload; sockets are capped per user and per session; a socket closes when its user's access ends
(all in agents/web/streams.py).
"""

from __future__ import annotations

import asyncio
import functools
import logging
from typing import TYPE_CHECKING, NamedTuple
from urllib.parse import parse_qs

from asgiref.sync import sync_to_async
from autobahn.exception import Disconnected  # what Daphne (aptix_serve) raises on a send to a gone client
from channels.generic.websocket import AsyncWebsocketConsumer
from django.conf import settings
from django.template.loader import render_to_string
from django.utils.html import format_html

from agents.events import FINAL_EVENT_TYPES, message_events, session_group
from agents.selectors import event_list_between, event_list_unseen, turn_aget_by_id
from agents.sessions import SessionNotFoundError, session_get
from aptix import logcontext, metrics
from aptix.ids import HEX_ID

from .live import LiveRenderer
from .renders import release, renders_for
from .streams import (
    CLOSE_BAD_CURSOR,
    CLOSE_SIGNED_OUT,
    CLOSE_TOO_BIG,
    CLOSE_TOO_MANY,
    access_lost,
    open_streams,
    user_group,
)

if TYPE_CHECKING:
    from agents.models import AgentSession, Turn

logger = logging.getLogger("aptix.stream")


class Cursor(NamedTuple):
    """Where the page's stream stands: after event `seq` of `turn_id` ("" when the page showed no
    turn: before every turn)."""

    turn_id: str
    seq: int


MAX_SEQ = 2**31 - 1  # TurnEvent.seq is an integer column: a larger number is no seq (PostgreSQL refuses it)


class BadCursor(ValueError):
    """A `?turn=&seq=` cursor that no page writes."""


def _header(scope: dict, name: bytes) -> str | None:
    value = next((v for k, v in scope.get("headers") or () if k.lower() == name), None)
    return value.decode("latin-1") if value is not None else None


def cursor_of(query_string: bytes) -> Cursor | None:
    """The page's cursor (`?turn=<id>&seq=<n>`; `turn` empty: the page showed no turn), None when the
    socket did not come from a session page; BadCursor when it is not a turn id and a seq (a NUL byte
    would reach the database as a DataError on PostgreSQL)."""
    query = parse_qs(query_string.decode("utf-8", "replace"), keep_blank_values=True)
    if "seq" not in query:
        return None
    turn_id, seq = (query.get("turn") or [""])[0], query["seq"][0]
    if (turn_id and not HEX_ID.fullmatch(turn_id)) or not seq.isascii() or not seq.isdigit() or int(seq) > MAX_SEQ:
        raise BadCursor(f"Not a stream cursor: turn={turn_id!r}, seq={seq!r}")
    return Cursor(turn_id, int(seq))


@functools.lru_cache(maxsize=64)
def _sidebar_titles(named: tuple[tuple[str, str], ...]) -> str:
    """The sidebar entries of sessions just named, drawn once for every socket of their user: each of
    a user's sockets gets the same note (with 500 of them open, escaping it in each was 4.5% of the
    process's CPU: py-spy, bench/streams_concurrency.py)."""
    return "".join(
        format_html('<span id="session-title-{}" hx-swap-oob="true">{}</span>', session_id, title)
        for session_id, title in named
    )


class SessionStreamConsumer(AsyncWebsocketConsumer):
    session: AgentSession | None = None
    closed = False
    catch_ups: asyncio.Task | None = None

    async def connect(self) -> None:
        user = self.scope.get("user")
        if user is None or not user.is_authenticated:
            await self.close()
            return
        session_id = self.scope["url_route"]["kwargs"]["session_id"]
        logcontext.bind(request_id=logcontext.request_id_from(_header(self.scope, b"x-request-id")), user_id=user.pk)
        try:
            session = await sync_to_async(session_get)(user=user, session_id=session_id, read=True)
        except SessionNotFoundError:
            await self.close()
            return
        try:
            cursor = cursor_of(self.scope.get("query_string") or b"")
        except BadCursor as exc:
            logger.info("Stream refused: %s", exc, extra={"event": "stream.refused", "session_id": session.id})
            await self.accept()
            await self._close(CLOSE_BAD_CURSOR)
            return
        refused = open_streams.admit(self, user_id=user.pk, session_id=session.id)
        if refused:
            logger.info("Stream refused: %s", refused, extra={"event": "stream.refused", "session_id": session.id})
            await self.accept()
            await self._close(CLOSE_TOO_MANY)
            return
        self.session, self.user_id = session, user.pk
        logcontext.bind(session_id=session.id)  # every later log line of this socket carries it
        self.group = session_group(session.id)
        self.sent: dict[str, int] = {}  # turn id → highest seq sent on this connection
        self.open: dict[str, float] = {}  # turn id → when this socket last sent an event of it (until its end)
        self.sending = asyncio.Lock()  # live events and catch-ups go out one batch at a time, in order
        self.turns: dict[str, Turn] = {}
        self.renderer = LiveRenderer(session)  # this socket's replay
        self.shared = renders_for(session)  # live events: rendered once for every socket of the session here
        await self.channel_layer.group_add(self.group, self.channel_name)
        await self.channel_layer.group_add(user_group(user.pk), self.channel_name)
        await self.accept()
        self.rechecks = asyncio.create_task(self._recheck_forever())
        if cursor is not None and cursor.turn_id:
            self.sent[cursor.turn_id] = cursor.seq  # the page shows the turn up to there
        await self._replay(cursor)
        self.catch_ups = asyncio.create_task(self._catch_up_forever())

    async def send(self, text_data: str | None = None, bytes_data: bytes | None = None, close: bool = False) -> None:
        """Send, unless the client has gone meanwhile: its disconnect is then the next message in this
        consumer's queue, and what was on its way has nobody to go to. Daphne raises autobahn's
        `Disconnected` there (ASGI asks servers for an error of their own, an OSError by the spec's
        advice); escaping, it ended the consumer with "Exception inside application" in the log."""
        if self.closed:
            return
        try:
            await super().send(text_data=text_data, bytes_data=bytes_data, close=close)
        except (Disconnected, OSError):
            self.closed = True

    async def disconnect(self, code) -> None:
        self.closed = True
        if self.session is not None:
            self.rechecks.cancel()
            if self.catch_ups is not None:
                self.catch_ups.cancel()
            release(self.shared)
            open_streams.release(self, user_id=self.user_id, session_id=self.session.id)
            await self.channel_layer.group_discard(self.group, self.channel_name)
            await self.channel_layer.group_discard(user_group(self.user_id), self.channel_name)

    async def receive(self, text_data=None, bytes_data=None) -> None:
        """The stream is one-way: a message from the client is ignored, an oversized one closes it."""
        if len(text_data or bytes_data or "") > settings.APTIX_WS_MAX_MESSAGE:
            metrics.refused("ws-message-size")
            await self._close(CLOSE_TOO_BIG)

    async def dispatch(self, message: dict) -> None:
        """Channels runs `close_old_connections` on asgiref's one sync thread before every message
        it hands a consumer: a trip through the queue of every ORM call in the process. Live
        events need no connection of that thread (their renders have a thread of their own,
        renders.py), so they skip it; twenty turns starting at once had each turn's first token
        wait behind the others' run and history loads there."""
        kind = message.get("type")
        if kind == "turn.events":
            await self.turn_events(message)
        elif kind == "session.moved":  # once per turn to each of the user's sockets: no ORM call either
            await self.session_moved(message)
        elif kind == "session.titled":  # once per new session: no ORM call either
            await self.session_titled(message)
        elif kind == "badge.count":  # a count in the header changed (the inbox's): no ORM call either
            await self.badge_count(message)
        else:
            await super().dispatch(message)

    async def turn_events(self, message: dict) -> None:
        """A batch of live events from the session's group (agents/events.py)."""
        if self.session is None or message.get("session_id") != self.session.id:
            return
        async with self.sending:
            await self._send_live(message)

    async def _send_live(self, message: dict) -> None:
        for event in message_events(message):
            turn_id, seq = event["turn_id"], event["seq"]
            if self.closed:
                return
            try:  # every event, even one already replayed here: the shared renderer follows the turn
                html = await self.shared.render(turn_id, event["event"], event["payload"], seq, event.get("turn_row"))
            except Exception:
                logger.exception("Rendering event %s of turn %s failed", seq, turn_id)
                continue
            sent = self.sent.get(turn_id, 0)
            if seq <= sent:
                continue  # replayed already
            if seq > sent + 1:
                await self._fill_gap(turn_id, sent, seq)
                if self.closed:
                    return
            self._sent(turn_id, seq, event["event"])
            await self.send(text_data=html)

    async def session_moved(self, message: dict) -> None:
        """From the user's group: sessions of theirs got a new turn (in that order: the last is the
        newest); the page's sidebar puts each first (static/js/aptix.js), whichever session this
        stream is of."""
        ids = [str(i) for i in message.get("session_ids", ())]
        if ids and all(i.isalnum() for i in ids):
            await self.send(
                text_data=f'<div id="session-moved" hidden hx-swap-oob="true" data-sessions="{" ".join(ids)}"></div>'
            )

    async def session_titled(self, message: dict) -> None:
        """From the user's group: sessions of theirs were named after their first answer
        (agents/run/titles.py; [[session id, title], …], gathered): their sidebar entries, and the
        header when this stream is of one of them, show the names (escaped: a model wrote them)."""
        named = tuple(
            (str(item[0]), str(item[1]))
            for item in message.get("titles", ())
            if len(item) == 2 and HEX_ID.fullmatch(str(item[0])) and item[1]
        )
        html = _sidebar_titles(named)
        for session_id, title in named:
            if self.session is not None and self.session.id == session_id:
                html += format_html('<h1 id="session-title" title="{}" hx-swap-oob="true">{}</h1>', title, title)
        if html:
            await self.send(text_data=html)

    async def badge_count(self, message: dict) -> None:
        """From the user's group: a count of the header's changed (`badge`: "inbox", the automations'
        items waiting for this user, automations/inbox.py); the page swaps the badge in, and a rise
        may show a browser notification (static/js/aptix.js)."""
        badge, count = str(message.get("badge", "")), message.get("count")
        if not badge.isalpha() or not isinstance(count, int) or count < 0:
            return
        shown = str(count) if count else ""
        await self.send(
            text_data=format_html(
                '<span id="badge-{}" class="badge" hx-swap-oob="true" data-count="{}">{}</span>', badge, count, shown
            )
        )

    async def access_check(self, message: dict) -> None:
        """From the user's group: their access may have changed (agents/web/streams.py)."""
        ended = message.get("ended_session")
        lost = CLOSE_SIGNED_OUT if ended and ended == self._login_key() else await self._access_lost()
        if lost is not None:
            await self._close(lost)

    # --- internals ---------------------------------------------------------------------------

    def _login_key(self) -> str | None:
        login = self.scope.get("session")
        return getattr(login, "session_key", None)

    async def _access_lost(self) -> int | None:
        """None while the socket may go on; else the close code that says why not."""
        assert self.session is not None
        return await sync_to_async(access_lost)(
            user_id=self.user_id, session_key=self._login_key(), session_id=self.session.id
        )

    async def _recheck_forever(self) -> None:
        while not self.closed:
            await asyncio.sleep(settings.APTIX_WS_RECHECK)
            if not self.closed and (lost := await self._access_lost()) is not None:
                await self._close(lost)

    async def _close(self, code: int) -> None:
        if not self.closed:
            self.closed = True
            await self.close(code=code)

    async def _replay(self, cursor: Cursor | None) -> None:
        assert self.session is not None  # connect() replays only after it found the session
        limit = settings.APTIX_WS_REPLAY_MAX
        events = await sync_to_async(event_list_unseen)(session_id=self.session.id, cursor=cursor, limit=limit + 1)
        if len(events) > limit:
            logger.info("Replay of more than %d events refused", limit, extra={"event": "stream.stale"})
            await self.send(text_data=render_to_string("agents/_stream_notice.html", {"reason": "stale"}))
            return
        for event in events:
            if self.closed:
                return
            await self._replay_event(event.turn_id, event.type, event.payload, event.seq)

    def _sent(self, turn_id: str, seq: int, event_type: str) -> None:
        self.sent[turn_id] = seq
        if event_type in FINAL_EVENT_TYPES:
            self.open.pop(turn_id, None)
        else:
            self.open[turn_id] = asyncio.get_running_loop().time()

    async def _catch_up_forever(self) -> None:
        """A turn this socket follows that has been quiet for APTIX_WS_CATCHUP seconds is looked up
        in the database: its last events, its end above all, may never have reached the socket
        (nothing later would show the gap, as in `_fill_gap`). A quiet turn (a long tool call,
        a wait for approval) costs one indexed query per period."""
        period = settings.APTIX_WS_CATCHUP
        loop = asyncio.get_running_loop()
        while not self.closed:
            await asyncio.sleep(period / 2)
            for turn_id, heard in list(self.open.items()):
                if self.closed or loop.time() - heard < period:
                    continue
                self.open[turn_id] = loop.time()
                async with self.sending:
                    await self._fill_gap(turn_id, self.sent.get(turn_id, 0), None)

    async def _fill_gap(self, turn_id: str, sent: int, seq: int | None) -> None:
        """Live event `seq` came (None: a turn was quiet), but this socket last sent `sent` of the
        turn: the events between never reached it (a channel-layer message lost, a rendering that
        failed). They are in the database (a run writes events before it broadcasts them): send them
        now, from there."""
        limit = settings.APTIX_WS_REPLAY_MAX
        events = await sync_to_async(event_list_between)(turn_id=turn_id, after=sent, before=seq, limit=limit + 1)
        if not events:
            return
        logger.warning(
            "Stream of session %s missed events %d-%d of turn %s; sending them from the database",
            self.session.id if self.session else "",
            events[0].seq,
            events[-1].seq,
            turn_id,
            extra={"event": "stream.gap", "turn_id": turn_id},
        )
        if len(events) > limit:
            await self.send(text_data=render_to_string("agents/_stream_notice.html", {"reason": "stale"}))
            return
        self.renderer.forget(turn_id)  # what it remembers of the turn may be older than `sent`
        for event in events:
            await self._replay_event(event.turn_id, event.type, event.payload, event.seq)

    async def _replay_event(self, turn_id: str, event_type: str, payload: dict, seq: int) -> None:
        if self.closed or seq <= self.sent.get(turn_id, 0):
            return  # closed, or already sent (replayed, then broadcast again)
        self._sent(turn_id, seq, event_type)
        turn = self.turns.get(turn_id)
        if turn is None:
            turn = self.turns[turn_id] = await turn_aget_by_id(turn_id=turn_id)
        try:
            html = await sync_to_async(self.renderer.render)(turn, event_type, payload, seq)
        except Exception:
            logger.exception("Rendering event %s of turn %s failed", seq, turn_id)
            return
        await self.send(text_data=html)
