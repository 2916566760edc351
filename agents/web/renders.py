"""Each live event rendered once per process, shared by every socket of its session here.

A session's group message reaches every socket of the session that this process serves; the first
socket to handle an event renders it (agents/web/live.py's LiveRenderer, one per session per
process) and the others take the same HTML from `SessionRenders`. Only sockets that passed the
session's access check in `connect()` hold its `SessionRenders` (`renders_for`), and a message is
only rendered for the session it names, so one team's HTML never reaches another's socket.

The renderer keeps state between events (the text streamed so far, the tool calls seen), so events
are rendered in seq order: the sockets of a process receive the same messages in the same order.
A socket that joined late may see an event before a slower socket has handed on the ones before it;
then the turn's state is rebuilt from the database (its text so far, rendered whole), and an event
older than what was rendered is drawn on its own by a fresh renderer.

Appending streamed text needs neither the database nor a thread: it is rendered on the event loop,
and so is a new message's start once its turn is read (one thread hop fewer for each of
twenty turns starting at once, each of whose first delta waits for its start on the socket).
Other events are rendered (and their turn read) on a thread of the renders' own, not queued on
asgiref's one sync thread behind every ORM call of the process: twenty turns starting at once load
their runs and histories there, and each turn's first frame waited for all of them (most
of the first token's added latency at 20 streams).
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections import OrderedDict
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TypeVar

from asgiref.sync import sync_to_async
from django.db import connections

from agents.events.channel import turn_from_row
from agents.events.writer import db_threads_are_inline
from agents.models import AgentSession, Turn
from agents.selectors import turn_in_session_get

from .live import LiveRenderer

logger = logging.getLogger("aptix.stream")

KEEP_RENDERED = 512  # events of a session whose HTML is kept for the sockets that have yet to send it

# One thread (so one database connection, kept open, like the event writer's) for every session's
# renders in this process; a session's renders are one at a time anyway (SessionRenders.lock).
_executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="aptix-render")
T = TypeVar("T")


def _guarded(func: Callable[[], T]) -> T:
    try:
        return func()
    except Exception:
        connections.close_all()  # a broken connection must not fail every later render: reconnect
        raise


async def on_render_thread(func: Callable[..., T], *args: object) -> T:
    if db_threads_are_inline():  # tests: the caller's connection, on asgiref's sync thread
        return await sync_to_async(functools.partial(func, *args))()
    return await asyncio.get_running_loop().run_in_executor(_executor, _guarded, functools.partial(func, *args))


def close_render_connection() -> None:
    """Close the render thread's database connection (test teardown; it reopens when needed)."""
    _executor.submit(connections.close_all).result(timeout=10)


def _read_turn(turn_id: str, session_id: str) -> Turn:
    return turn_in_session_get(turn_id=turn_id, session_id=session_id)


@dataclass
class SessionRenders:
    session: AgentSession
    renderer: LiveRenderer = field(init=False)
    viewers: int = 0
    html: OrderedDict[tuple[str, int], str] = field(default_factory=OrderedDict)
    upto: dict[str, int] = field(default_factory=dict)  # turn id → last seq the renderer drew
    turns: dict[str, Turn] = field(default_factory=dict)
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    renders: int = 0  # events rendered (not taken from `html`): what the tests count

    def __post_init__(self) -> None:
        self.renderer = LiveRenderer(self.session)

    async def render(self, turn_id: str, event_type: str, payload: dict, seq: int, row: dict | None = None) -> str:
        """The event's HTML fragment, rendered by the first socket that asks for it (`row`: the turn's
        row, which the batch that starts a turn carries: it need not be read)."""
        key = (turn_id, seq)
        if key in self.html:
            return self.html[key]
        async with self.lock:
            if key in self.html:
                return self.html[key]
            turn = self.turns.get(turn_id)
            if turn is None and row is not None and row.get("session_id") == self.session.id:
                turn = self.turns[turn_id] = turn_from_row(row)
                turn.session = self.session
            if turn is None:
                turn = self.turns[turn_id] = await on_render_thread(_read_turn, turn_id, self.session.id)
            last = self.upto.get(turn_id)
            if last is not None and seq <= last:  # older than the renderer's state: drawn apart
                html = await on_render_thread(LiveRenderer(self.session).render, turn, event_type, payload, seq)
            else:
                if last is not None and seq > last + 1:
                    self.renderer.forget(turn_id)  # events this process never saw: start from the database
                self.upto[turn_id] = seq
                if self.renderer.renders_inline(turn, event_type, seq):
                    html = self.renderer.render(turn, event_type, payload, seq)
                else:
                    html = await on_render_thread(self.renderer.render, turn, event_type, payload, seq)
            self.renders += 1
            self.html[key] = html
            while len(self.html) > KEEP_RENDERED:
                self.html.popitem(last=False)
            return html


_sessions: dict[str, SessionRenders] = {}


def _key(session: AgentSession) -> str:
    """The author's sockets share one renders, the teammates reading a shared session another (their
    fragments have no buttons: the same event, drawn once more per process while readers watch)."""
    return f"{session.id}:read" if session.read_only else session.id


def renders_for(session: AgentSession) -> SessionRenders:
    """The shared renders of `session` in this process, for a socket that may read it (call
    `release` when it closes)."""
    key = _key(session)
    shared = _sessions.get(key)
    if shared is None:
        shared = _sessions[key] = SessionRenders(session)
    shared.viewers += 1
    return shared


def release(shared: SessionRenders) -> None:
    shared.viewers -= 1
    key = _key(shared.session)
    if shared.viewers <= 0 and _sessions.get(key) is shared:
        del _sessions[key]


def session_renders(session_id: str) -> SessionRenders | None:
    """The shared renders of a session while this process serves a socket of it (for tests and logs)."""
    return _sessions.get(session_id)
