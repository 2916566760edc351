"""A socket whose client has gone while a message was on its way to it.

Daphne raises on a send to a closed connection (autobahn's `Disconnected`; the ASGI spec asks servers
for an error of their own there). The client's disconnect is then the next message in the consumer's
queue; the send before it must not end the consumer with "Exception inside application" (seen in the
server's log for a burst whose clients closed as their turns ended)."""

from __future__ import annotations

import asyncio

from asgiref.sync import sync_to_async
from autobahn.exception import Disconnected
from channels.testing import WebsocketCommunicator

from agents.turns import turn_start
from aptix.asgi import application
from tests.helpers import async_db
from tests.helpers.streams import ORIGIN, session_cookie

pytestmark = async_db


async def test_a_note_to_a_socket_whose_client_has_gone_is_dropped(make_session, alice):
    here, elsewhere = await make_session(), await make_session()
    gone, refused = False, asyncio.Event()

    async def daphne_like(scope, receive, send):
        async def send_unless_gone(message):
            if gone:
                refused.set()
                raise Disconnected("Attempt to send on a closed protocol")
            await send(message)

        await application(scope, receive, send_unless_gone)

    headers = [ORIGIN, (b"cookie", await session_cookie(alice))]
    communicator = WebsocketCommunicator(daphne_like, f"/ws/sessions/{here.id}/", headers=headers)
    connected, _ = await communicator.connect(timeout=5)
    assert connected
    gone = True
    await sync_to_async(turn_start)(session=elsewhere, text="Hi")  # a sidebar note to every socket of alice
    await asyncio.wait_for(refused.wait(), 5)
    for _ in range(3):
        await asyncio.sleep(0)  # the failed send's exception, had it escaped, would have ended the consumer
    assert not communicator.future.done(), communicator.future.exception()
    await communicator.disconnect()
