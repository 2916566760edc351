"""Clients of the session stream `/ws/sessions/<id>/` through the real ASGI application: a logged-in
user's session cookie, a connected socket, and reading its frames."""

from __future__ import annotations

import re

from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator
from django.conf import settings
from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY
from django.contrib.sessions.backends.db import SessionStore

from aptix.asgi import application

ORIGIN = (b"origin", b"http://127.0.0.1")
SIDEBAR_NOTE = re.compile(r'<div id="session-moved" ')  # consumers.py session_moved
CURSOR = re.compile(r'id="stream-cursor" hx-swap-oob="true" data-turn="(\w+)" data-seq="(\d+)"')
TAIL = re.compile(r'^<b data-seq="(\d+)">')  # appended text (templates/agents/_live_tail.html)
TIMEOUT = 5.0
CONNECT_TIMEOUT = 5.0


@sync_to_async
def session_cookie(user) -> bytes:
    """The `Cookie` header value of a fresh login of `user`."""
    store = SessionStore()
    store[SESSION_KEY] = str(user.pk)
    store[BACKEND_SESSION_KEY] = "django.contrib.auth.backends.ModelBackend"
    store[HASH_SESSION_KEY] = user.get_session_auth_hash()
    store.save()
    return f"{settings.SESSION_COOKIE_NAME}={store.session_key}".encode()


async def connect(
    session_id, user=None, *, origin=ORIGIN, query="", timeout: float = CONNECT_TIMEOUT
) -> tuple[WebsocketCommunicator, bool]:
    """A socket on the session's stream (anonymous without `user`) and whether it was accepted
    (within `timeout` seconds). A refusal closes at once, so the timeout only bounds a slow accept: on a
    loaded 2-core CI machine 1 s was too short and a test's first socket was never open."""
    headers = [origin] if origin else []
    if user is not None:
        headers.append((b"cookie", await session_cookie(user)))
    path = f"/ws/sessions/{session_id}/" + (f"?{query}" if query else "")
    communicator = WebsocketCommunicator(application, path, headers=headers)
    connected, _ = await communicator.connect(timeout=timeout)
    return communicator, connected


async def collect(communicator, timeout=5.0) -> list[str]:
    """Messages until one carries a turn's final state."""
    messages = []
    while True:
        text = await communicator.receive_from(timeout=timeout)
        if SIDEBAR_NOTE.match(text):  # for the page's sidebar (a session got a turn), not of this stream's turns
            continue
        messages.append(text)
        if re.search(r'class="turn status-(completed|failed|cancelled|limit_reached)"', text):
            return messages


def seqs(messages: list[str]) -> list[int]:
    """The event each frame carries: its stream cursor, or (streamed text appended without moving
    the cursor, agents/web/live.py) the seq on its tail."""
    found = []
    for text in messages:
        if SIDEBAR_NOTE.match(text):  # a session of the user got a new turn: no event of this session's
            continue
        cursor = CURSOR.search(text)
        found.append(int(cursor.group(2)) if cursor else int(_tail(text)))
    return found


def _tail(text: str) -> str:
    tail = TAIL.search(text)
    assert tail is not None, f"a frame without a cursor or a tail: {text[:200]}"
    return tail.group(1)


class Socket:
    """A connected stream with the session cookie it used."""

    def __init__(self, communicator, cookie: bytes) -> None:
        self.communicator, self.cookie = communicator, cookie

    async def frames(self) -> list[str]:
        """Every frame sent until the stream goes quiet."""
        frames = []
        while not await self.communicator.receive_nothing(timeout=0.3):
            frames.append(await self.communicator.receive_from())
        return frames

    async def closed_with(self) -> int:
        while True:
            output = await self.communicator.receive_output(timeout=TIMEOUT)
            if output["type"] == "websocket.close":
                return output.get("code", 1000)


async def open_socket(session_id: str, user, *, query: str = "", cookie: bytes | None = None) -> Socket:
    """A socket of `user` (or of the login `cookie` names) that the stream accepted."""
    cookie = cookie or await session_cookie(user)
    path = f"/ws/sessions/{session_id}/" + (f"?{query}" if query else "")
    communicator = WebsocketCommunicator(application, path, headers=[ORIGIN, (b"cookie", cookie)])
    connected, _ = await communicator.connect()
    assert connected
    return Socket(communicator, cookie)
