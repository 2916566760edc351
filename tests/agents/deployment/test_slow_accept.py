"""A websocket the server is slow to accept still opens.

`manage.py aptix_serve` as a real subprocess on the test PostgreSQL. Another connection holds the
sessions table locked, so the consumer's accept waits on its read of the session: the way a
deployment's migration, or a busy process with fifty tabs reconnecting at once, holds a handshake.
Daphne's command line let Autobahn drop such a handshake after 5 s with no HTTP answer at all (the
client read end-of-stream: seen in CI as 50 sockets opened while 50 turns streamed); it now waits
as long as Daphne lets the application take to accept (aptix_serve's WS_CONNECT_TIMEOUT).
"""

from __future__ import annotations

import asyncio

import psycopg
import pytest
import websockets
from asgiref.sync import sync_to_async
from django.conf import settings as django_settings
from django.db import connection

from agents.models import AgentSession
from agents.sessions import session_create
from tests.browser.live import LiveServer, live_database_url
from tests.helpers import async_db
from tests.helpers.streams import session_cookie

pytestmark = [pytest.mark.slow, async_db]

HELD = 7.0  # seconds the table stays locked: past Autobahn's 5 s, within the 20 s Daphne gives an accept


async def _until_a_backend_waits_on_a_lock(locker: psycopg.AsyncConnection) -> None:
    """PostgreSQL says when the server's read of the session is queued behind the lock."""
    async with asyncio.timeout(10):
        while True:
            waiting = await locker.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND pid <> pg_backend_pid()"
            )
            row = await waiting.fetchone()
            if row and row[0]:
                return
            await asyncio.sleep(0.05)


async def _open(uri: str, *, origin: str, cookie: str) -> websockets.ClientConnection:
    return await websockets.connect(uri, origin=origin, additional_headers={"Cookie": cookie}, open_timeout=30)


async def test_a_socket_whose_accept_waits_seven_seconds_still_opens(tmp_path, alice, team_a):
    if connection.vendor != "postgresql":
        pytest.skip("needs PostgreSQL (make test starts it): the lock is a PostgreSQL table lock")
    session = await sync_to_async(session_create)(team=team_a, user=alice, execution="ask")
    server = LiveServer(var_dir=tmp_path / "web", env={"SECRET_KEY": django_settings.SECRET_KEY})
    await asyncio.to_thread(server.start)
    try:
        cookie = (await session_cookie(alice)).decode()
        uri = f"ws://127.0.0.1:{server.port}/ws/sessions/{session.id}/?turn=&seq=0"
        async with await psycopg.AsyncConnection.connect(live_database_url()) as locker:
            await locker.execute(f"LOCK TABLE {AgentSession._meta.db_table} IN ACCESS EXCLUSIVE MODE")
            opening = asyncio.create_task(_open(uri, origin=server.url, cookie=cookie))
            await _until_a_backend_waits_on_a_lock(locker)
            await asyncio.sleep(HELD)  # the subject is time itself: how long a handshake may wait
            assert not opening.done(), "the handshake ended while its accept was still waiting"
            await locker.commit()  # the lock goes with the transaction
        socket = await asyncio.wait_for(opening, timeout=30)
        async with socket:
            assert socket.state is websockets.State.OPEN
            assert socket.response is not None and socket.response.status_code == 101
    finally:
        await asyncio.to_thread(server.stop)
