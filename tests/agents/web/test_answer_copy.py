"""The answer's Copy button (so the stream carries each answer once): the Markdown of an answer
is fetched from its own owner-only URL when the button is clicked, instead of being carried a second
time in every page and final stream frame as the button's data attribute."""

from __future__ import annotations

import pytest
from django.urls import reverse

from agents.models import Turn
from agents.sessions import session_create
from agents.web.live import LiveRenderer
from tests.helpers import answered_turn

ANSWER = 'Use `total()`:\n\n```python\nprint("<b>" & 1)\n```\n\nDone — "quoted".'


@pytest.fixture
def answered(team_a, alice):
    turn = answered_turn(team_a, alice, "Copy me", ANSWER, "How?")
    return turn.session, turn


def _url(turn: Turn) -> str:
    return reverse("turn-answer", args=[turn.session_id, turn.id])


def test_the_owner_gets_the_answer_as_markdown(client, alice, answered):
    _, turn = answered
    client.force_login(alice)
    response = client.get(_url(turn))
    assert response.status_code == 200
    assert response["Content-Type"] == "text/markdown; charset=utf-8"
    assert response["Cache-Control"] == "private, no-store"
    assert response.content.decode() == ANSWER


def test_the_page_carries_the_answer_once_and_the_button_its_url(client, alice, answered):
    session, turn = answered
    client.force_login(alice)
    html = client.get(reverse("session-detail", args=[session.id])).content.decode()
    assert f'data-copy="answer" data-copy-url="{_url(turn)}"' in html
    assert "data-copy-text" not in html
    assert html.count("Done — &quot;quoted&quot;") == 0  # no escaped copy of the Markdown in an attribute


def test_the_final_stream_frame_has_no_second_copy_of_the_answer(alice, answered):
    session, turn = answered
    html = LiveRenderer(session).render(
        turn,
        "turn.completed",
        {"status": "completed", "answer": ANSWER, "mode": session.mode, "usage": {}, "steps": 1},
        2,
    )
    assert f'data-copy-url="{_url(turn)}"' in html
    assert "```python" not in html  # the Markdown itself is not in the frame


@pytest.mark.parametrize("who", ["bob", "carol"])
def test_nobody_else_gets_it(client, answered, who, request):
    _, turn = answered
    client.force_login(request.getfixturevalue(who))
    assert client.get(_url(turn)).status_code == 404


def test_signed_out_is_sent_to_log_in(client, answered):
    _, turn = answered
    response = client.get(_url(turn))
    assert response.status_code == 302 and "/login" in response["Location"]


def test_an_unfinished_turn_or_another_sessions_turn_is_a_404(client, team_a, alice, answered):
    session, turn = answered
    running = Turn.objects.create(session=session, index=2, user_message="More?", mode=session.mode)
    other = session_create(team=team_a, user=alice, title="Other")
    client.force_login(alice)
    assert client.get(_url(running)).status_code == 404
    assert client.get(reverse("turn-answer", args=[other.id, turn.id])).status_code == 404


def test_only_get(client, alice, answered):
    _, turn = answered
    client.force_login(alice)
    assert client.post(_url(turn)).status_code == 405
