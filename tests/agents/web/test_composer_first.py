"""Composer-first: the home page is a composer with the mode and Ask/Agent pickers
beside it; the first send creates the session and its first turn together; visiting pages creates
nothing; a first send with bad input, or past the rate limit, writes nothing and keeps the draft."""

from __future__ import annotations

import pytest
from asgiref.sync import sync_to_async
from django.test import override_settings
from django.urls import reverse

from agents.models import AgentSession, Turn
from agents.runner import get_runner
from agents.turns import ERROR_EMPTY_MESSAGE, ERROR_MESSAGE_TOO_LONG, MAX_MESSAGE_LENGTH
from tests.helpers import ServerLikeAsyncClient, async_db

NO_LIMITS = {"APTIX_RATE_TURNS": None, "APTIX_RATE_API": None, "APTIX_RATE_BAD_TOKENS": None}


@pytest.mark.django_db
def test_the_home_page_is_a_composer_and_visiting_pages_creates_no_session(client, alice, team_a, password):
    client.login(username="alice", password=password)
    html = client.get(reverse("home")).content.decode()
    assert 'id="new-session"' in html and '<textarea id="message" name="message"' in html
    assert '<select id="id_mode" name="mode"' in html and 'value="data-analysis"' in html
    assert 'name="execution" value="ask" checked' in html and 'name="execution" value="agent"' in html
    assert "Start session" not in html  # no separate step: the first send starts it
    for url in [reverse("home"), reverse("session-list"), reverse("settings"), "/?q=x", reverse("home")]:
        assert client.get(url).status_code == 200
    assert client.get(reverse("session-new")).status_code == 405  # a GET never creates one
    assert AgentSession.objects.count() == 0 and Turn.objects.count() == 0


@override_settings(**NO_LIMITS)
@async_db
async def test_the_first_send_creates_the_session_and_its_first_turn(llm, model, alice, team_a, password):
    client = ServerLikeAsyncClient()
    await sync_to_async(client.login)(username="alice", password=password)
    model.reply("Revenue grew every month.")
    form = {"team": team_a.id, "mode": "data-analysis", "execution": "agent", "message": "  Revenue by month?\n"}
    response = await client.post(reverse("session-new"), form)

    session = await AgentSession.objects.aget()
    assert response.status_code == 302 and response["Location"] == reverse("session-detail", args=[session.id])
    assert (session.user_id, session.team_id, session.mode, session.execution) == (
        alice.id,
        team_a.id,
        "data-analysis",
        "agent",
    )
    assert session.title == "Revenue by month?"  # named by its first message
    turn = await Turn.objects.aget()
    assert (turn.session_id, turn.index, turn.user_message, turn.mode, turn.execution) == (
        session.id,
        1,
        "Revenue by month?",
        "data-analysis",
        "agent",
    )
    finished = await get_runner().wait(turn.id)  # the send dispatched its run
    assert finished.status == Turn.Status.COMPLETED and finished.answer == "Revenue grew every month."
    assert model.last_messages[-1] == {"role": "user", "content": "Revenue by month?"}


BAD_FIRST_SENDS = [
    ({"message": "   \n  "}, ERROR_EMPTY_MESSAGE),
    ({"message": "x" * (MAX_MESSAGE_LENGTH + 1)}, ERROR_MESSAGE_TOO_LONG),
    ({"mode": "astrology"}, "Select a valid choice. astrology is not one of the available choices."),
    ({"execution": "turbo"}, "Select a valid choice. turbo is not one of the available choices."),
    ({"team": "team-b"}, "Select a valid choice. That choice is not one of the available choices."),
]


@pytest.mark.django_db
@override_settings(**NO_LIMITS)
@pytest.mark.parametrize(("change", "reason"), BAD_FIRST_SENDS)
def test_a_first_send_with_bad_input_creates_nothing_and_keeps_the_draft(
    client, alice, team_a, team_b, password, change, reason
):
    client.login(username="alice", password=password)
    form = {"team": team_a.id, "mode": "general", "execution": "ask", "message": "Draft that must survive", **change}
    if form["team"] == "team-b":
        form["team"] = team_b.id  # carol's team: not one alice may pick
    response = client.post(reverse("session-new"), form)
    html = response.content.decode()
    assert response.status_code == 400 and reason in html
    if "message" not in change:
        assert ">Draft that must survive</textarea>" in html
    assert AgentSession.objects.count() == 0 and Turn.objects.count() == 0


@override_settings(**{**NO_LIMITS, "APTIX_RATE_TURNS": "1/m"})
@async_db
async def test_a_first_send_past_the_rate_limit_creates_nothing(llm, model, alice, team_a, password):
    client = ServerLikeAsyncClient()
    await sync_to_async(client.login)(username="alice", password=password)
    model.reply("One.")
    form = {"team": team_a.id, "mode": "general", "execution": "ask", "message": "First"}
    response = await client.post(reverse("session-new"), form)
    assert response.status_code == 302
    await get_runner().wait((await Turn.objects.aget()).id)

    response = await client.post(reverse("session-new"), {**form, "message": "Second"})
    html = response.content.decode()
    assert response.status_code == 429 and int(response["Retry-After"]) > 0
    assert "Too many new messages or conversations: at most 1 per minute." in html and ">Second</textarea>" in html
    assert await AgentSession.objects.acount() == 1 and await Turn.objects.acount() == 1 and model.calls == 1


@pytest.mark.django_db
def test_a_first_send_needs_a_login(client, alice, team_a):
    response = client.post(reverse("session-new"), {"team": team_a.id, "mode": "general", "message": "Hi"})
    assert response.status_code == 302 and response["Location"].startswith(reverse("login"))
    assert AgentSession.objects.count() == 0
