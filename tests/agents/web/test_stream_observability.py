"""What the session stream tells operators: the websockets open and the sockets refused over a cap
show in the metrics, and the stream's log lines carry its request id (X-Request-ID when sane), user
and session."""

from __future__ import annotations

from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator
from prometheus_client.parser import text_string_to_metric_families

from agents.web.streams import CLOSE_TOO_MANY
from aptix.asgi import application
from aptix.metrics import exposition
from tests.helpers import inline_db
from tests.helpers.logs import json_lines
from tests.helpers.streams import ORIGIN, open_socket, session_cookie

pytestmark = inline_db


async def scraped(name: str, **labels: str) -> float:
    text = (await sync_to_async(exposition)()).decode()
    found = [
        sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
        if sample.name == name and sample.labels == labels
    ]
    return found[0] if found else 0.0


async def test_open_sockets_and_refusals_are_counted(make_session, alice, settings):
    settings.APTIX_WS_MAX_PER_SESSION = 1
    session = await make_session()
    opened, refused = (
        await scraped("aptix_websockets_open"),
        await scraped("aptix_refusals_total", reason="ws-per-session"),
    )
    held = await open_socket(session.id, alice)
    assert await scraped("aptix_websockets_open") == opened + 1
    over = await open_socket(session.id, alice)
    assert await over.closed_with() == CLOSE_TOO_MANY
    assert await scraped("aptix_refusals_total", reason="ws-per-session") == refused + 1
    assert await scraped("aptix_websockets_open") == opened + 1  # the refused one never counted
    await held.communicator.disconnect()
    assert await scraped("aptix_websockets_open") == opened


async def test_a_streams_log_lines_carry_its_request_user_and_session_ids(make_session, alice, settings):
    settings.APTIX_WS_MAX_PER_SESSION = 1
    session = await make_session()
    held = await open_socket(session.id, alice)
    headers = [ORIGIN, (b"cookie", await session_cookie(alice)), (b"x-request-id", b"edge-77")]
    with json_lines() as logged:
        over = WebsocketCommunicator(application, f"/ws/sessions/{session.id}/", headers=headers)
        await over.connect()
        await over.receive_output(timeout=5)  # the close that refuses it
    [line] = [line for line in logged() if line["message"].startswith("Stream refused")]
    assert (line["request_id"], line["user_id"], line["session_id"]) == ("edge-77", alice.pk, session.id)
    await held.communicator.disconnect()
