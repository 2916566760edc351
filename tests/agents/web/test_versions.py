"""Versions of a message: after an Edit, Retry or Regenerate the timeline shows the conversation the
model sees (the newest version of each message) and the message sent again switches in place between
its versions, ‹ 1/2 ›, each with its question and answer (agents/web/versions.py,
agents/selectors.py turn_versions, views/history.py turn_version_view)."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse
from django.utils import timezone

from agents.models import Turn, TurnEvent
from agents.selectors import turn_versions
from agents.sessions import session_create

pytestmark = pytest.mark.django_db
EDIT, REGENERATE = Turn.Origin.EDIT, Turn.Origin.REGENERATE


def add_turn(session, index: int, *, origin: str = "message", replaces: tuple[Turn, ...] = ()) -> Turn:
    """A finished turn whose message is "Question <index>" and answer "Answer <index>"; the turns in
    `replaces` are marked replaced by it, as turn_resend does."""
    turn = Turn.objects.create(
        session=session, index=index, user_message=f"Question {index}", mode=session.mode, origin=origin,
        status=Turn.Status.COMPLETED, answer=f"Answer {index}", finished_at=timezone.now(),
    )  # fmt: skip
    TurnEvent.objects.create(turn=turn, seq=1, type="turn.started", payload={"mode": session.mode})
    TurnEvent.objects.create(turn=turn, seq=2, type="turn.completed", payload={"status": "completed"})
    Turn.objects.filter(pk__in=[t.pk for t in replaces]).update(replaced_by=turn)
    return turn


def shown(html: str) -> list[int]:
    """The indices of the turns drawn, in order (nested ones too)."""
    ids = re.findall(r'<article class="turn [^"]*" id="turn-([0-9a-f]{32})"', html)
    index = dict(Turn.objects.filter(pk__in=ids).values_list("id", "index"))
    return [index[i] for i in ids]


@pytest.fixture
def session(team_a, alice):
    return session_create(team=team_a, user=alice, title="Revenue")


@pytest.fixture
def edited_then_regenerated(session):
    """Questions 1–3; question 2 edited (turn 4 replaces 2 and 3); that answer regenerated (turn 5)."""
    one, two, three = (add_turn(session, i) for i in (1, 2, 3))
    four = add_turn(session, 4, origin=EDIT, replaces=(two, three))
    five = add_turn(session, 5, origin=REGENERATE, replaces=(four,))
    return one, two, three, four, five


def version_url(session, turn, number):
    return reverse("turn-version", args=[session.id, turn.id, number])


def test_each_resend_adds_a_version_of_the_message_it_sent_again(session, edited_then_regenerated):
    one, two, _, four, five = edited_then_regenerated
    assert turn_versions(session_id=session.id, turns=[one, five]) == {five.id: [two.id, four.id, five.id]}
    assert turn_versions(session_id=session.id, turns=[one]) == {}  # sent once: no versions


def test_the_page_shows_the_newest_version_with_its_switcher(client, alice, session, edited_then_regenerated):
    *_, five = edited_then_regenerated
    client.force_login(alice)
    page = client.get(reverse("session-detail", args=[session.id])).content.decode()
    assert shown(page) == [1, 5]  # what the model sees; the replaced turns are earlier versions
    assert '<span class="visually-hidden">Version 3 of 3</span>' in page
    assert f'hx-get="{version_url(session, five, 2)}" hx-target="#turn-{five.id}-version"' in page
    assert 'aria-label="Show version 2 of 3"' in page and 'disabled aria-label="Next version"' in page
    assert f'<div class="turn-version" id="turn-{five.id}-version"></div>' in page
    assert page.count('class="versions"') == 1  # the first message was sent once


def test_switching_shows_that_versions_question_and_answer(client, alice, session, edited_then_regenerated):
    *_, five = edited_then_regenerated
    client.force_login(alice)
    first = client.get(version_url(session, five, 1)).content.decode()
    assert shown(first) == [2, 3]  # the message and the turns replaced with it
    assert "Question 2" in first and "Answer 2" in first and "Answer 3" in first
    assert "Version 1 of 3: replaced by your edited message, so it is no longer part of the conversation" in first
    assert '<span class="visually-hidden">Version 1 of 3</span>' in first
    assert 'disabled aria-label="Previous version"' in first and 'aria-label="Show version 2 of 3"' in first
    assert f'hx-target="#turn-{five.id}-version"' in first  # it switches in the newest version's place
    assert 'class="edit-message"' not in first and '<form class="again"' not in first  # not to be sent again
    second = client.get(version_url(session, five, 2)).content.decode()
    assert shown(second) == [4] and "Answer 4" in second and "replaced by a regenerated answer" in second
    newest = client.get(version_url(session, five, 3))
    assert (newest.status_code, newest.content) == (200, b"")  # the article shows its own body again


def test_a_version_holding_a_message_sent_again_switches_that_one_too(client, alice, session):
    one, two = add_turn(session, 1), add_turn(session, 2)
    three = add_turn(session, 3, origin=REGENERATE, replaces=(two,))
    four = add_turn(session, 4, origin=EDIT, replaces=(one, three))
    client.force_login(alice)
    assert shown(client.get(reverse("session-detail", args=[session.id])).content.decode()) == [4]
    first = client.get(version_url(session, four, 1)).content.decode()
    assert shown(first) == [1, 3]
    assert f'hx-target="#turn-{three.id}-version"' in first and f'id="turn-{three.id}-version"' in first
    assert shown(client.get(version_url(session, three, 1)).content.decode()) == [2]


def test_no_such_version_and_someone_elses_are_404(client, alice, bob, session, edited_then_regenerated):
    one, *_, five = edited_then_regenerated
    client.force_login(alice)
    for turn, number in ((five, 0), (five, 4), (one, 1)):
        assert client.get(version_url(session, turn, number)).status_code == 404
    client.force_login(bob)  # same team, not his session
    response = client.get(version_url(session, five, 1))
    assert response.status_code == 404 and "Question" not in response.content.decode()
    client.logout()
    assert client.get(version_url(session, five, 1)).status_code == 302  # to the login page


def test_history_pages_hold_only_the_newest_versions(client, alice, session, settings):
    settings.APTIX_SESSION_PAGE_TURNS = 2
    *_, three, four = (add_turn(session, i) for i in (1, 2, 3, 4))
    add_turn(session, 5, origin=EDIT, replaces=(three, four))
    client.force_login(alice)
    page = client.get(reverse("session-detail", args=[session.id])).content.decode()
    assert shown(page) == [2, 5] and "?before=2" in page
    earlier = client.get(reverse("session-history", args=[session.id]), {"before": 2}).content.decode()
    assert shown(earlier) == [1] and "timeline-earlier" not in earlier
