"""A live event is rendered once per process for all sockets of its session
(agents/web/renders.py), not once per socket; a turn's start and end are drawn from the events'
payloads, without reading the turn and its events back; other teams' sockets get nothing."""

from __future__ import annotations

import msgpack
import pytest
from asgiref.sync import sync_to_async
from django.db import connection
from django.test.utils import CaptureQueriesContext

from agents.events.channel import turn_from_row, turn_row
from agents.runner import get_runner
from agents.sessions import session_create
from agents.turns import turn_start
from agents.web.live import LiveRenderer
from agents.web.renders import session_renders
from tests.helpers import inline_db
from tests.helpers.streams import collect, connect, seqs


@inline_db
async def test_each_event_is_rendered_once_for_every_socket_of_the_session(
    llm, model, make_session, alice, carol, team_b
):
    session = await make_session()
    others = await sync_to_async(session_create)(team=team_b, user=carol)
    first, _ = await connect(session.id, alice)
    second, _ = await connect(session.id, alice)
    stranger, connected = await connect(others.id, carol)
    assert connected
    model.reply("word " * 300)
    turn = await sync_to_async(turn_start)(session=session, text="Talk")
    get_runner().start(turn.id)
    frames = [await collect(first), await collect(second)]
    shared = session_renders(session.id)
    assert shared is not None and session_renders(others.id) is not shared
    stored = [e.seq async for e in turn.events.order_by("seq")]
    assert frames[0] == frames[1] and seqs(frames[0]) == stored  # the same HTML, every event once
    assert shared.renders == len(stored)  # rendered once, not once per socket
    assert await stranger.receive_nothing(timeout=0.2)  # carol's socket on her session hears nothing
    for communicator in (first, second, stranger):
        await communicator.disconnect()
    assert session_renders(session.id) is None  # the last socket gone, the shared state goes too


def _table_reads(queries: list[dict]) -> list[str]:
    """Queries that read a turn row by id or any turn event."""
    return [q["sql"] for q in queries if "agents_turnevent" in q["sql"] or '"agents_turn"."id" = ' in q["sql"]]


@pytest.mark.django_db
def test_start_and_end_are_drawn_from_the_payloads_without_reading_the_turn_back(team_a, alice):
    session = session_create(team=team_a, user=alice)
    turn = turn_start(session=session, text="Hi")
    renderer = LiveRenderer(session)
    with CaptureQueriesContext(connection) as start:
        started = renderer.render(turn, "turn.started", {"mode": session.mode, "execution": "ask"}, 1)
    assert f'id="turn-{turn.id}"' in started and _table_reads(start.captured_queries) == []
    # not one query at all: renders.py draws a new message's start on the event loop, where the ORM
    # would raise SynchronousOnlyOperation
    assert start.captured_queries == []
    # ...from the row its first batch carries through the channel layer (msgpack on Redis), too
    row = msgpack.unpackb(msgpack.packb(turn_row(turn)))
    carried = turn_from_row(row)
    carried.session = session
    with CaptureQueriesContext(connection) as from_row:
        again = LiveRenderer(session).render(carried, "turn.started", {"mode": session.mode, "execution": "ask"}, 1)
    assert from_row.captured_queries == [] and again == started
    renderer.render(turn, "step.started", {"step": 1, "max_steps": 10}, 2)
    renderer.render(turn, "model.delta", {"text": "The answer "}, 3)
    renderer.render(turn, "model.delta", {"text": "is **42**."}, 4)
    usage = {"prompt_tokens": 120, "completion_tokens": 7, "turn_total": 127}
    renderer.render(turn, "model.message", {"step": 1, "content": "The answer is **42**.", "usage": usage}, 5)
    final = {
        "status": "completed",
        "answer": "The answer is **42**.",
        "mode": session.mode,
        "mode_changes": [],
        "branch": None,
        "usage": {"prompt_tokens": 120, "completion_tokens": 7},
        "steps": 1,
    }
    with CaptureQueriesContext(connection) as end:
        ended = renderer.render(turn, "turn.completed", final, 6)
    assert _table_reads(end.captured_queries) == []
    assert 'class="turn status-completed"' in ended and "<strong>42</strong>" in ended
    assert "127" in ended  # the tokens the payload reported
