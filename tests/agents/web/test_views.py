"""Login and the minimal home page: own sessions only, create one, other people's sessions 404."""

from __future__ import annotations

import pytest
from asgiref.sync import sync_to_async
from django.urls import reverse

from agents.models import AgentSession
from agents.runner import get_runner
from agents.sessions import SessionManager, session_create
from tests.helpers import ServerLikeAsyncClient

pytestmark = pytest.mark.django_db


def test_pages_require_login(client, team_a, alice):
    session = session_create(team=team_a, user=alice)
    for url in [reverse("home"), reverse("session-detail", args=[session.id])]:
        response = client.get(url)
        assert response.status_code == 302 and response["Location"].startswith(reverse("login"))
    response = client.post(reverse("session-new"), {"team": team_a.id, "mode": "general", "execution": "ask"})
    assert response.status_code == 302 and AgentSession.objects.count() == 1


def test_login_page_and_login(client, alice, password):
    page = client.get(reverse("login"))
    assert page.status_code == 200 and 'name="password"' in page.content.decode()
    bad = client.post(reverse("login"), {"username": "alice", "password": "wrong"})
    assert bad.status_code == 200 and "enter a correct username and password" in bad.content.decode()
    good = client.post(reverse("login"), {"username": "alice", "password": password})
    assert good.status_code == 302 and good["Location"] == reverse("home")


def test_home_lists_only_my_sessions(client, team_a, alice, bob, password):
    mine = session_create(team=team_a, user=alice, title="Alice's plan")
    session_create(team=team_a, user=bob, title="Bob's secret")
    client.login(username="alice", password=password)
    html = client.get(reverse("home")).content.decode()
    assert "Alice&#x27;s plan" in html and "Bob&#x27;s secret" not in html
    assert reverse("session-detail", args=[mine.id]) in html
    for key in ["general", "ddr-authoring", "workflow-authoring", "data-analysis"]:
        assert f'value="{key}"' in html


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
async def test_create_session_in_a_mode(llm, model, team_a, alice, password):
    """Composer-first: the session is created by its first message."""
    client = ServerLikeAsyncClient()
    await sync_to_async(client.login)(username="alice", password=password)
    model.reply("Let us look at Q3.")
    response = await client.post(
        reverse("session-new"),
        {"team": team_a.id, "mode": "data-analysis", "execution": "agent", "title": "Q3", "message": "Q3 revenue?"},
    )
    session = await AgentSession.objects.select_related("user", "team").aget()
    assert response.status_code == 302 and response["Location"] == reverse("session-detail", args=[session.id])
    assert (session.mode, session.execution, session.title, session.user, session.team) == (
        "data-analysis",
        "agent",
        "Q3",
        alice,
        team_a,
    )
    await get_runner().wait((await session.turns.aget()).id)
    page = (await client.get(response["Location"])).content.decode()
    assert "Q3" in page and "data-analysis" in page and "Let us look at Q3." in page


def test_create_session_with_bad_input_shows_errors_and_writes_nothing(client, team_a, team_b, alice, password):
    client.login(username="alice", password=password)
    response = client.post(reverse("session-new"), {"team": team_b.id, "mode": "astrology", "execution": "ask"})
    assert response.status_code == 400
    html = response.content.decode()
    assert "Select a valid choice" in html
    assert AgentSession.objects.count() == 0


def test_someone_elses_session_is_404(client, team_a, team_b, alice, bob, carol, password):
    session = session_create(team=team_a, user=alice, title="Private")
    for username in ["bob", "carol"]:
        client.login(username=username, password=password)
        response = client.get(reverse("session-detail", args=[session.id]))
        assert response.status_code == 404 and "Private" not in response.content.decode()


def test_session_page_shows_mode_history(client, team_a, alice, password):
    session = session_create(team=team_a, user=alice)
    SessionManager().set_session_mode_sync(session.id, "ddr-authoring", "Writing TUL-011", team_a, alice)
    client.login(username="alice", password=password)
    html = client.get(reverse("session-detail", args=[session.id])).content.decode()
    assert "<strong>general</strong> → <strong>ddr-authoring</strong> — Writing TUL-011" in html


def test_user_without_team_is_told_so(client, django_user_model, password):
    django_user_model.objects.create_user(username="loner", password=password)
    client.login(username="loner", password=password)
    assert "not in a team yet" in client.get(reverse("home")).content.decode()


def test_generated_images_are_served_only_to_whoever_may_see_their_session(
    client, team_a, alice, bob, carol, password, settings, tmp_path
):
    from agents.sessions import session_create
    from aptix.tokens import api_token_create

    settings.MEDIA_ROOT = tmp_path
    session = session_create(team=team_a, user=alice)
    folder = tmp_path / "images" / session.id
    folder.mkdir(parents=True)
    name = "ab" * 16
    (folder / f"{name}.png").write_bytes(b"\x89PNG fake")
    (tmp_path / "images" / f"{name}.png").write_bytes(b"\x89PNG flat")  # not under a session
    (tmp_path / "secret.txt").write_text("no")
    url = f"/media/images/{session.id}/{name}.png"

    assert client.get(url).status_code == 302  # anonymous: to the login page
    client.login(username="alice", password=password)
    response = client.get(url)
    assert response.status_code == 200 and b"".join(response.streaming_content) == b"\x89PNG fake"
    assert response["Content-Type"] == "image/png" and "private" in response["Cache-Control"]
    for other in (
        f"/media/images/{name}.png",
        "/media/secret.txt",
        f"/media/images/{session.id}/../../secret.txt",
        f"/media/images/{session.id}/{'cd' * 16}.png",
    ):
        assert client.get(other).status_code == 404, other
    for user in ("bob", "carol"):  # a team mate, another team: the session is not theirs
        client.login(username=user, password=password)
        assert client.get(url).status_code == 404, user
    client.logout()

    _, secret = api_token_create(user=alice)  # programs fetch the images an API answer links to
    response = client.get(url, headers={"Authorization": f"Bearer {secret}"})
    assert response.status_code == 200
    assert client.get(url, headers={"Authorization": "Bearer apx_wrong"}).status_code == 401
    _, bobs = api_token_create(user=bob)
    assert client.get(url, headers={"Authorization": f"Bearer {bobs}"}).status_code == 404


def test_session_page_shows_the_conversation_and_the_offline_label(client, team_a, alice, password):
    from agents.models import Turn

    session = session_create(team=team_a, user=alice)
    Turn.objects.create(
        session=session,
        index=1,
        user_message="<b>hi</b>",
        mode="general",
        status="completed",
        answer="Hello <script>alert(1)</script>",
    )
    client.login(username="alice", password=password)
    html = client.get(reverse("session-detail", args=[session.id])).content.decode()
    assert "model <strong>offline</strong>" in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html and "<script>alert(1)" not in html
    assert "&lt;b&gt;hi&lt;/b&gt;" in html
