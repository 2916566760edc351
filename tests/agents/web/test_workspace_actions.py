"""The workspace's HTMX actions over HTTP: sending, mode and execution switches, tool toggles,
branching — and that nobody but the owner reaches any of them."""

from __future__ import annotations

import re

import pytest
from asgiref.sync import sync_to_async
from django.urls import reverse

from agents.models import AgentSession, Turn
from agents.runner import get_runner
from agents.sessions import session_create
from modes.models import ModeHistory
from tests.helpers import ServerLikeAsyncClient, async_db


@pytest.fixture
def session(team_a, alice):
    return session_create(team=team_a, user=alice, title="Alice's plans")


def post(client, name, session, **data):
    return client.post(reverse(name, args=[session.id]), data)


async def _untitled_session_signed_in(team, user, password):
    """A new session of `user` (no title yet: the first message names it) and a client signed in as them."""
    session = await sync_to_async(session_create)(team=team, user=user)
    client = ServerLikeAsyncClient()
    await sync_to_async(client.login)(username=user.username, password=password)
    return session, client


@pytest.mark.django_db
def test_other_users_get_404_from_every_action(client, session, bob, carol, password):
    for username in ["bob", "carol"]:
        client.login(username=username, password=password)
        for name, data in [
            ("session-detail", None),
            ("session-mode", {"mode": "data-analysis"}),
            ("session-execution", {"execution": "agent"}),
            ("session-tools", {"tool": "image_gen"}),
            ("session-branch", {"turn": "x"}),
        ]:
            url = reverse(name, args=[session.id])
            response = client.get(url) if data is None else client.post(url, data)
            assert response.status_code == 404, (username, name)
            assert b"Alice" not in response.content
        assert b"Alice's plans" not in client.get(reverse("home")).content  # not in their sidebar
    session.refresh_from_db()
    assert session.mode == "general" and session.execution == "ask" and session.tool_toggles == {}


@pytest.mark.django_db
def test_anonymous_users_are_sent_to_log_in(client, session):
    response = post(client, "session-tools", session, tool="image_gen")
    assert response.status_code == 302 and response["Location"].startswith("/login/")


@pytest.mark.django_db
def test_a_manual_mode_switch_is_recorded_with_source_user(client, session, alice, password):
    client.login(username="alice", password=password)
    response = post(client, "session-mode", session, mode="Data-Analysis ")
    html = response.content.decode()
    assert response.status_code == 200
    assert 'id="mode-badge"' in html and "data-analysis" in html  # the badge, swapped out of band
    assert "<strong>general</strong> → <strong>data-analysis</strong>" in html  # the timeline entry
    # ... and the session's entry in the sidebar
    assert re.search(rf'id="session-meta-{session.id}" hx-swap-oob="true"><span class="badge">data-analysis<', html)
    [row] = ModeHistory.objects.filter(session=session)
    assert (row.previous_mode, row.new_mode, row.source, row.user) == ("general", "data-analysis", "user", alice)
    response = post(client, "session-mode", session, mode="no-such-mode")
    assert response.status_code == 422 and "Valid modes" in response.content.decode()
    assert ModeHistory.objects.filter(session=session).count() == 1


@pytest.mark.django_db
def test_execution_and_tool_toggles_persist_for_the_next_turn(client, session, password):
    client.login(username="alice", password=password)
    switched = post(client, "session-execution", session, execution="agent")
    assert switched.status_code == 200
    assert re.search(rf'id="session-meta-{session.id}" hx-swap-oob="true">.*Agent ·', switched.content.decode())
    assert post(client, "session-execution", session, execution="turbo").status_code == 400
    assert post(client, "session-tools", session, tool="image_gen").status_code == 200  # unticked: off
    html = post(client, "session-tools", session, tool="agent_change_mode").content.decode()
    session.refresh_from_db()
    assert session.execution == "agent" and session.tool_toggles == {"image_gen": False, "agent_change_mode": False}
    assert "always on" in html  # ... but agent_change_mode is offered whatever the toggle says
    post(client, "session-tools", session, tool="image_gen", enabled="on")
    assert post(client, "session-tools", session, tool="rm_rf").status_code == 400
    session.refresh_from_db()
    assert session.tool_toggles == {"agent_change_mode": False}


@async_db
async def test_sending_starts_a_turn_that_runs_after_the_response(llm, model, team_a, alice, password):
    session, client = await _untitled_session_signed_in(team_a, alice, password)
    model.reply("Hi there.")
    response = await client.post(reverse("turn-new", args=[session.id]), {"message": "Hello"})
    html = response.content.decode()
    assert response.status_code == 200 and 'data-if-absent="1"' in html and "Hello" in html
    # The composer waits for the turn: Send is disabled, the box takes the next message.
    assert 'data-busy="1"' in html and 'disabled title="Waits for the running turn">Send</button>' in html
    assert '<h1 id="session-title" title="Hello" hx-swap-oob="true">Hello</h1>' in html  # named by it
    assert f'<span id="session-title-{session.id}" hx-swap-oob="true">Hello</span>' in html
    turn = await Turn.objects.aget(session=session)
    turn = await get_runner().wait(turn.id)
    assert turn.status == "completed" and turn.answer == "Hi there."
    response = await client.post(reverse("turn-new", args=[session.id]), {"message": "   "})
    assert response.status_code == 422 and "The message is empty." in response.content.decode()


@async_db
async def test_branch_opens_a_linked_child_session_carrying_the_request(llm, model, team_a, alice, password):
    session, client = await _untitled_session_signed_in(team_a, alice, password)
    model.reply("Would you like to: 1) Stay, 2) Switch, or 3) Switch to **Data Analysis** and start a new session?")
    await client.post(reverse("turn-new", args=[session.id]), {"message": "Chart revenue by month"})
    first = await Turn.objects.aget(session=session, index=1)
    await get_runner().wait(first.id)
    model.reply(
        "", tool_calls=[("agent_change_mode", {"mode": "data-analysis", "branch": True, "reason": "Data questions"})]
    )
    model.reply("Switched; continue in a new session.")
    # the "New session in Data Analysis" button: its text and the structured choice (consent)
    answer = {"message": "3", "choice_mode": "data-analysis", "choice_branch": "true"}
    await client.post(reverse("turn-new", args=[session.id]), answer)
    second = await get_runner().wait((await Turn.objects.aget(session=session, index=2)).id)
    assert second.status == "completed"
    response = await client.post(reverse("session-branch", args=[session.id]), {"turn": first.id})
    assert response.status_code == 422  # that turn asked for no new session
    model.reply("Here is revenue by month.")
    response = await client.post(reverse("session-branch", args=[session.id]), {"turn": second.id})
    assert response.status_code == 204
    child = await AgentSession.objects.aget(parent=session)
    assert response["HX-Redirect"] == reverse("session-detail", args=[child.id])
    assert child.mode == "data-analysis" and child.user_id == alice.id and child.team_id == team_a.id
    carried = await Turn.objects.aget(session=child)
    assert carried.user_message == "Chart revenue by month"  # the request, not the "3"
    carried = await get_runner().wait(carried.id)
    assert carried.status == "completed"
    page = await client.get(reverse("session-detail", args=[child.id]))
    assert f'href="/sessions/{session.id}/"' in page.content.decode()  # links back to its parent
    assert child.title == "Chart revenue by month"
