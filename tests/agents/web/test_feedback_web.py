"""The rating buttons under an answer (templates/agents/_feedback.html, agents/web/views/feedback.py):
drawn for the session's owner under the latest finished answer (on the page and in the live stream's
final frame), pressed state in aria-pressed; a 👎 opens the reason form; after the next turn the
rating shows and can no longer change; nobody else rates (a teammate reading a shared session: 403,
anyone else 404) and a reader sees no buttons."""

from __future__ import annotations

import re
from html import escape

import pytest
from django.urls import reverse

from agents.feedback.services import ERROR_COMMENT, ERROR_NOT_LATEST
from agents.models import AnswerFeedback, Turn
from agents.sharing.services import session_share
from agents.web.live import LiveRenderer
from tests.helpers import answered_turn

pytestmark = pytest.mark.django_db
HTMX = {"HTTP_HX_REQUEST": "true"}


@pytest.fixture
def answered(team_a, alice):
    return answered_turn(team_a, alice, "Rate me", "Paris.", "Capital of France?")


def _url(turn: Turn) -> str:
    return reverse("turn-feedback", args=[turn.session_id, turn.id])


def _pressed(html: str, name: str) -> str:
    """The aria-pressed of the button named `name` in `html`."""
    match = re.search(rf'aria-label="{name}"[^>]*aria-pressed="(\w+)"', html)
    assert match, f"no {name} button in the fragment"
    return match.group(1)


def test_the_latest_answer_has_both_buttons_unpressed(client, alice, answered):
    client.force_login(alice)
    html = client.get(reverse("session-detail", args=[answered.session_id])).content.decode()
    assert f'hx-post="{_url(answered)}"' in html
    assert (_pressed(html, "Good answer"), _pressed(html, "Bad answer")) == ("false", "false")
    assert 'role="group" aria-label="Rate this answer"' in html


def test_a_bad_answer_asks_why_then_keeps_the_reason_and_comment(client, alice, answered):
    client.force_login(alice)
    first = client.post(_url(answered), {"rating": "down"}, **HTMX)
    assert first.status_code == 200
    html = first.content.decode()
    assert _pressed(html, "Bad answer") == "true" and _pressed(html, "Good answer") == "false"
    assert "What was wrong with this answer?" in html and 'name="reason" value="not_helpful"' in html
    assert AnswerFeedback.objects.get(turn=answered).rating == "down"

    detail = {"rating": "down", "detail": "1", "reason": "wrong", "comment": "It is Lyon."}
    second = client.post(_url(answered), detail, **HTMX).content.decode()
    assert "Thanks for your feedback." in second and "What was wrong" not in second  # the form closed
    row = AnswerFeedback.objects.get(turn=answered)
    assert (row.rating, row.reason, row.comment) == ("down", "wrong", "It is Lyon.")

    reopened = client.post(_url(answered), {"rating": "down"}, **HTMX).content.decode()
    assert 'value="wrong" checked' in reopened and ">It is Lyon.</textarea>" in reopened  # as given
    up = client.post(_url(answered), {"rating": "up"}, **HTMX).content.decode()
    assert _pressed(up, "Good answer") == "true" and _pressed(up, "Bad answer") == "false"
    assert AnswerFeedback.objects.get(turn=answered).reason == ""


def test_a_bad_value_is_refused_in_the_block_with_nothing_written(client, alice, answered):
    client.force_login(alice)
    response = client.post(_url(answered), {"rating": "down", "detail": "1", "comment": "x" * 2001}, **HTMX)
    assert response.status_code == 422  # swapped by htmx (the page's htmx-config)
    assert escape(ERROR_COMMENT) in response.content.decode()
    assert "What was wrong with this answer?" in response.content.decode()  # the form stays open
    assert not AnswerFeedback.objects.exists()


def test_after_the_next_turn_the_rating_shows_and_is_final(client, alice, answered):
    client.force_login(alice)
    client.post(_url(answered), {"rating": "up"}, **HTMX)
    Turn.objects.create(
        session=answered.session, index=2, user_message="And Spain?", mode=answered.mode, status="completed"
    )
    html = client.get(reverse("session-detail", args=[answered.session_id])).content.decode()
    assert "You rated this answer: good answer" in html
    assert f'hx-post="{_url(answered)}"' not in html  # no buttons on the earlier turn
    refused = client.post(_url(answered), {"rating": "down"}, **HTMX)
    assert refused.status_code == 422 and ERROR_NOT_LATEST in refused.content.decode()
    assert 'aria-label="Bad answer"' not in refused.content.decode()
    assert AnswerFeedback.objects.get(turn=answered).rating == "up"


def test_the_live_streams_final_frame_carries_the_buttons(alice, answered):
    html = LiveRenderer(answered.session).render(
        answered,
        "turn.completed",
        {"status": "completed", "answer": "Paris.", "mode": answered.mode, "usage": {}, "steps": 1},
        2,
    )
    assert f'hx-post="{_url(answered)}"' in html and _pressed(html, "Good answer") == "false"


def test_nobody_else_rates(client, answered, bob, carol):
    """Another team's member or a teammate: 404; a teammate reading it once shared: 403, as every write
    asked of a reader (tests/agents/web/test_sharing_web.py)."""
    for who in (bob, carol):
        client.force_login(who)
        assert client.post(_url(answered), {"rating": "up"}, **HTMX).status_code == 404
    session_share(session=answered.session, user=answered.session.user, shared=True)
    client.force_login(bob)
    assert client.post(_url(answered), {"rating": "up"}, **HTMX).status_code == 403
    client.force_login(carol)
    assert client.post(_url(answered), {"rating": "up"}, **HTMX).status_code == 404
    assert not AnswerFeedback.objects.exists()


def test_a_teammate_reading_a_shared_session_sees_no_buttons(client, bob, answered):
    session_share(session=answered.session, user=answered.session.user, shared=True)
    client.force_login(bob)
    response = client.get(reverse("session-detail", args=[answered.session_id]))
    assert response.status_code == 200 and "Paris." in response.content.decode()
    assert "Good answer" not in response.content.decode()


def test_only_post(client, alice, answered):
    client.force_login(alice)
    assert client.get(_url(answered)).status_code == 405
