"""The live stream is compressed on the wire (permessage-deflate, RFC 7692) for clients that offer
it, as browsers do: `manage.py aptix_serve` accepts the offer, and a client that offers nothing gets
plain frames. What it saves per viewer is in bench/stream_bytes.py."""

from __future__ import annotations

import pytest
import websockets
from asgiref.sync import sync_to_async
from django.conf import settings
from websockets.datastructures import Headers

from agents.sessions import session_create
from tests.helpers import async_db
from tests.helpers.streams import session_cookie

pytestmark = [pytest.mark.asyncio(loop_scope="session"), async_db]


@pytest.fixture(scope="module")
def daphne_env() -> dict[str, str]:
    return {"SECRET_KEY": settings.SECRET_KEY}  # the login the test writes must hold there


async def handshake(server, session_id: str, cookie: bytes, **options) -> Headers:
    uri = f"ws://127.0.0.1:{server.port}/ws/sessions/{session_id}/?turn=&seq=0"
    headers = {"Cookie": cookie.decode()}
    async with websockets.connect(uri, origin=server.url, additional_headers=headers, **options) as socket:
        assert socket.response is not None and socket.response.status_code == 101
        return socket.response.headers  # case-insensitive


async def test_the_stream_is_compressed_for_clients_that_offer_it(daphne_server, alice, team_a):
    session = await sync_to_async(session_create)(team=team_a, user=alice)
    cookie = await session_cookie(alice)
    offered = await handshake(daphne_server, session.id, cookie)  # websockets offers deflate, as Chromium does
    assert offered.get("Sec-WebSocket-Extensions", "").startswith("permessage-deflate")
    plain = await handshake(daphne_server, session.id, cookie, compression=None)
    assert "Sec-WebSocket-Extensions" not in plain
