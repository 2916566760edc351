"""The session page at constant cost (agents/web/views/history.py): it draws the last
APTIX_SESSION_PAGE_TURNS turns, the rest load a page at a time, and a finished turn is drawn from its
final state without its model.delta and step.started rows."""

from __future__ import annotations

import re
from contextlib import contextmanager
from datetime import timedelta

import pytest
from django.db import connection
from django.urls import reverse

from agents.models import Turn, TurnEvent
from agents.sessions import session_create
from agents.web.timeline import render_turn
from agents.web.views.history import ERROR_BEFORE, ERROR_SINCE
from modes.models import ModeHistory
from tests.helpers.turns import START, add_turn

pytestmark = pytest.mark.django_db


@pytest.fixture
def long_session(team_a, alice, settings):
    settings.APTIX_SESSION_PAGE_TURNS = 3
    session = session_create(team=team_a, user=alice)
    for index in range(1, 8):
        add_turn(session, index)
    return session


def shown(html: str) -> list[str]:
    """The indices of the turns drawn in the HTML, in order."""
    ids = re.findall(r'<article class="turn [^"]*" id="turn-([0-9a-f]{32})"', html)
    index = dict(Turn.objects.filter(pk__in=ids).values_list("id", "index"))
    return [str(index[i]) for i in ids]


def test_the_page_draws_the_last_turns_and_a_sentinel_for_the_earlier_ones(client, long_session, alice):
    client.force_login(alice)
    page = client.get(reverse("session-detail", args=[long_session.id])).content.decode()
    assert shown(page) == ["5", "6", "7"]
    history = reverse("session-history", args=[long_session.id])
    assert f'hx-get="{history}?before=5"' in page and 'hx-trigger="click, intersect once"' in page
    assert f'href="{reverse("session-detail", args=[long_session.id])}?since=2"' in page
    last = long_session.turns.get(index=7)
    assert f'data-turn="{last.id}" data-seq="6"' in page  # the stream's cursor: the newest turn's last event


def test_earlier_pages_load_before_the_first_turn_shown_with_their_mode_changes(client, long_session, alice):
    between = START + timedelta(minutes=3, seconds=30)  # after turn 3, before turn 4
    change = ModeHistory.objects.create(
        session=long_session, team=long_session.team, user=alice, previous_mode="general", new_mode="data-analysis",
        reason="by hand", source="user",
    )  # fmt: skip
    ModeHistory.objects.filter(pk=change.pk).update(created_at=between)
    client.force_login(alice)
    url = reverse("session-history", args=[long_session.id])

    page = client.get(url, {"before": 5}).content.decode()
    assert shown(page) == ["2", "3", "4"] and "?before=2" in page
    assert page.index("Question 3") < page.index("by hand") < page.index("Question 4")
    first = client.get(url, {"before": 2}).content.decode()
    assert shown(first) == ["1"] and "timeline-earlier" not in first and "by hand" not in first
    assert "by hand" not in client.get(reverse("session-detail", args=[long_session.id])).content.decode()
    # Without JavaScript: the whole page from a turn on.
    since = client.get(reverse("session-detail", args=[long_session.id]), {"since": 2}).content.decode()
    assert shown(since) == ["2", "3", "4", "5", "6", "7"] and "by hand" in since


def test_only_the_owner_gets_the_earlier_turns(client, long_session, bob, carol):
    url = reverse("session-history", args=[long_session.id])
    assert client.get(url, {"before": 5}).status_code == 302  # to the login page
    for someone_else in (bob, carol):  # same team, other team: a 404 that says nothing
        client.force_login(someone_else)
        response = client.get(url, {"before": 5})
        assert response.status_code == 404 and "Question" not in response.content.decode()


def test_a_bad_turn_number_is_a_400_naming_it(client, long_session, alice):
    client.force_login(alice)
    url = reverse("session-history", args=[long_session.id])
    for query in ({}, {"before": "abc"}, {"before": "0"}, {"before": "-3"}):
        response = client.get(url, query)
        assert (response.status_code, response.content.decode()) == (400, ERROR_BEFORE)
    response = client.get(reverse("session-detail", args=[long_session.id]), {"since": "x"})
    assert (response.status_code, response.content.decode()) == (400, ERROR_SINCE)


@contextmanager
def rows_read():
    """Every turn-event row the code under test reads: each SELECT on the events table is run again
    (with the same SQL and parameters) to see the rows it returned."""
    seen: list[tuple] = []
    busy = False

    def wrapper(execute, sql, params, many, context):
        nonlocal busy
        result = execute(sql, params, many, context)
        if not busy and sql.lstrip().upper().startswith("SELECT") and TurnEvent._meta.db_table in sql:
            busy = True
            try:
                with connection.cursor() as cursor:
                    cursor.execute(sql, params)
                    names = [c[0] for c in cursor.description]
                    seen.extend(dict(zip(names, row, strict=True)) for row in cursor.fetchall())
            finally:
                busy = False
        return result

    with connection.execute_wrapper(wrapper):
        yield seen


def test_finished_turns_are_drawn_without_their_delta_and_step_rows(client, team_a, alice, settings):
    settings.APTIX_SESSION_PAGE_TURNS = 5
    session = session_create(team=team_a, user=alice)
    for index in (1, 2):
        add_turn(session, index)
    stopped = add_turn(session, 3, status="cancelled", stopped=True)
    running = add_turn(session, 4, status="running")
    client.force_login(alice)
    with rows_read() as rows:
        page = client.get(reverse("session-detail", args=[session.id])).content.decode()
    by_turn = {(r.get("turn_id"), r.get("type")) for r in rows if "type" in r}
    finished = {t.id for t in session.turns.exclude(pk=running.pk)}
    assert not {(t, kind) for t, kind in by_turn if t in finished and kind in ("model.delta", "step.started")}
    assert (running.id, "model.delta") in by_turn  # a running turn still shows what is streaming
    # ... and each finished turn looks exactly as drawn from all its events (the stopped one counts the
    # tokens its cut-off step used: 300 sent + the streamed text, estimated).
    for turn in session.turns.exclude(pk=running.pk):
        whole = render_turn(turn, list(turn.events.order_by("seq")), latest=False)
        assert whole in page
    assert "~426 tokens (estimated)" in render_turn(stopped, list(stopped.events.order_by("seq")), latest=False)
    assert "~426 tokens (estimated)" in page


def test_the_page_makes_the_same_queries_whatever_the_sessions_length(client, team_a, alice, settings):
    settings.APTIX_SESSION_PAGE_TURNS = 4
    counts = []
    client.force_login(alice)
    for length in (5, 40):
        session = session_create(team=team_a, user=alice, title=f"{length} turns")
        for index in range(1, length + 1):
            add_turn(session, index)
        queries: list[str] = []

        def count(execute, sql, *args, queries=queries):
            queries.append(sql)
            return execute(sql, *args)

        with connection.execute_wrapper(count):
            page = client.get(reverse("session-detail", args=[session.id])).content.decode()
        assert shown(page) == [str(i) for i in range(length - 3, length + 1)]
        counts.append(len(queries))
    assert counts[0] == counts[1]
