"""The session page's composer agrees with its stream cursor.

The page draws the composer busy or idle and hands the socket a cursor (the last event it shows); the
socket replays every event after it, and a turn's final event redraws the composer idle. A turn that
ends while the page is being read must therefore never leave a busy composer with a cursor that
already covers the turn's end: nothing would ever free it ("Working…" until a reload). The test ends
the turn after each query the page makes in turn, so every interleaving of the end with the page's
reads happens once.
"""

from __future__ import annotations

import re
from contextlib import contextmanager

import pytest
from django.db import connection
from django.urls import reverse

from agents.models import Turn, TurnEvent
from agents.sessions import session_create
from agents.turns import turn_end_unrun
from tests.helpers.turns import add_turn

pytestmark = pytest.mark.django_db


@contextmanager
def end_after_query(number: int, turn: Turn):
    """End `turn` (its row and final event, as a run's last write does) right after the page's
    query `number` (1-based) has run; yields the list of whether it did."""
    seen, done = [0], []

    def wrapper(execute, sql, params, many, context):
        result = execute(sql, params, many, context)
        seen[0] += 1
        if seen[0] == number and not done:
            done.append(True)
            turn_end_unrun(
                turn,
                session_id=turn.session_id,
                status="completed",
                event_type="turn.completed",
                payload={"answer": "Done."},
                mode=turn.mode,
            )
        return result

    with connection.execute_wrapper(wrapper):
        yield done


def page_state(html: str) -> tuple[bool, int]:
    """Whether the page's composer is busy, and the seq of its stream cursor."""
    form = re.search(r'<form id="composer"[^>]*>', html)
    assert form, "the session page has a composer"
    cursor = re.search(r"/ws/sessions/[0-9a-f]{32}/\?turn=([0-9a-f]*)&amp;seq=(\d+)", html)
    assert cursor, "the session page has a stream cursor"
    return 'data-busy="1"' in form.group(0), int(cursor.group(2))


def test_a_turn_ending_while_the_page_is_read_never_leaves_the_composer_busy(client, team_a, alice):
    client.force_login(alice)
    # How many queries the page makes with a running turn: the end is placed after each of them.
    session = session_create(team=team_a, user=alice)
    add_turn(session, 1, status="running")
    with end_after_query(10_000, session.turns.get()):
        page = client.get(reverse("session-detail", args=[session.id]))
    assert page_state(page.content.decode()) == (True, 4)  # busy, cursor on the last of its 4 events
    queries = 0

    def count(execute, sql, params, many, context):
        nonlocal queries
        queries += 1
        return execute(sql, params, many, context)

    with connection.execute_wrapper(count):
        client.get(reverse("session-detail", args=[session.id]))
    assert queries > 5

    busy_pages = idle_pages = 0
    for number in range(1, queries + 1):
        session = session_create(team=team_a, user=alice, title=f"Ends after query {number}")
        turn = add_turn(session, 1, status="running")
        with end_after_query(number, turn) as ended:
            html = client.get(reverse("session-detail", args=[session.id])).content.decode()
        assert ended, f"the turn was ended after query {number}"
        end = TurnEvent.objects.get(turn=turn, type="turn.completed")
        busy, cursor = page_state(html)
        # Busy is fine only while the socket still has the end to deliver (it redraws the composer).
        assert not (busy and cursor >= end.seq), f"ended after query {number}: busy, with the end behind the cursor"
        busy_pages += busy
        idle_pages += not busy
    # Both sides of the race were reached: the end landed before and after the page's reads.
    assert busy_pages and idle_pages
