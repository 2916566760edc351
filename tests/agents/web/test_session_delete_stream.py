"""Deleting a session (a soft delete, agents/sessions.py session_delete) closes its open streams at once,
as a real delete does (agents/web/streams.py), not only at their next periodic check."""

from __future__ import annotations

from django.urls import reverse

from agents.web.streams import CLOSE_SESSION_GONE
from tests.helpers import ServerLikeAsyncClient, async_db
from tests.helpers.streams import open_socket

pytestmark = async_db


async def test_deleting_a_session_closes_its_open_streams(make_session, alice):
    session = await make_session()
    socket = await open_socket(session.id, alice)
    client = ServerLikeAsyncClient()
    name, key = socket.cookie.decode().split("=", 1)
    client.cookies[name] = key  # the same login, in another tab
    response = await client.post(reverse("session-delete", args=[session.id]))
    assert response.status_code == 303
    assert await socket.closed_with() == CLOSE_SESSION_GONE
