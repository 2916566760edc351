"""Projects' pages: the list and its new-project form, a project's page (sessions, members, New
session in it), its edit and delete, the session menu's "Move to project…", the sidebar grouped by
project — and nobody outside a project gets any of it, whatever id they craft."""

from __future__ import annotations

import pytest
from asgiref.sync import sync_to_async
from django.test import override_settings
from django.urls import reverse

from agents.models import AgentSession
from agents.runner import get_runner
from agents.sessions import session_create
from aptix.models import Membership
from projects.models import Project
from projects.services import ERROR_NAME_TAKEN, project_create
from tests.helpers import ServerLikeAsyncClient, async_db

NO_LIMITS = {"APTIX_RATE_TURNS": None, "APTIX_RATE_API": None, "APTIX_RATE_BAD_TOKENS": None}


@pytest.fixture
def sales(team_a, alice):
    return project_create(
        team=team_a, user=alice, name="Sales", instructions="Answer in euros.", default_mode="data-analysis"
    )


@pytest.mark.django_db
def test_a_member_makes_a_project_on_the_list_page_and_lands_on_it(client, alice, bob, team_a):
    client.force_login(bob)
    assert "You are not in any project yet." in client.get(reverse("projects")).content.decode()
    form = {
        "team": "team-a",
        "name": "Board",
        "description": "Board packs",
        "instructions": "Be formal.",
        "default_mode": "ddr-authoring",
        "who": "chosen",
        "members": ["alice"],
    }
    response = client.post(reverse("projects"), form)
    project = Project.objects.get()
    assert response.status_code == 303 and response["Location"] == reverse("project-detail", args=[project.id])
    assert (project.name, project.instructions, project.default_mode, project.whole_team) == (
        "Board",
        "Be formal.",
        "ddr-authoring",
        False,
    )
    assert sorted(project.members.values_list("username", flat=True)) == ["alice", "bob"]
    again = client.post(reverse("projects"), {**form, "name": "BOARD"})
    assert again.status_code == 400 and ERROR_NAME_TAKEN in again.content.decode()
    assert Project.objects.count() == 1


@pytest.mark.django_db
def test_the_project_page_lists_its_sessions_members_and_a_new_session_in_it(client, alice, bob, sales, team_a):
    mine = session_create(team=team_a, user=alice, project=sales, title="Q3 revenue")
    session_create(team=team_a, user=bob, project=sales, title="Bob's private one")
    session_create(team=team_a, user=alice, title="Elsewhere")
    client.force_login(alice)
    html = client.get(reverse("project-detail", args=[sales.id])).content.decode()
    assert "Q3 revenue" in html and reverse("session-detail", args=[mine.id]) in html
    assert "Bob's private one" not in html and "Elsewhere" not in html  # another member's unshared session
    assert "<li>alice</li>" in html and "<li>bob</li>" in html
    assert f'href="{reverse("home")}?project={sales.id}"' in html
    home = client.get(reverse("home"), {"project": sales.id}).content.decode()
    assert "in Sales" in home and f'name="project" value="{sales.id}"' in home
    assert '<option value="data-analysis" selected>' in home


@override_settings(**NO_LIMITS)
@async_db
async def test_new_session_from_the_project_page_starts_in_the_project(llm, model, alice, team_a, password, sales):
    client = ServerLikeAsyncClient()
    await sync_to_async(client.force_login)(alice)
    model.reply("Revenue grew.")
    form = {"team": team_a.id, "project": sales.id, "mode": "data-analysis", "execution": "ask", "message": "Q3?"}
    response = await client.post(reverse("session-new"), form)
    session = await AgentSession.objects.aget()
    assert response.status_code == 302 and session.project_id == sales.id
    turn = await session.turns.aget()
    assert (await get_runner().wait(turn.id)).status == "completed"
    assert "Answer in euros." in model.last_messages[0]["content"]


@pytest.mark.django_db
def test_the_session_menu_moves_a_session_in_and_out_and_the_sidebar_groups_by_project(client, alice, sales, team_a):
    session = session_create(team=team_a, user=alice, title="Loose")
    other = session_create(team=team_a, user=alice, title="Other")
    client.force_login(alice)
    page = client.get(reverse("session-detail", args=[session.id])).content.decode()
    assert "Move to project…" in page and f'<option value="{sales.id}">Sales</option>' in page
    assert "No project</span>" not in page  # no session in a project yet: no groups
    moved = client.post(reverse("session-project", args=[session.id]), {"project": sales.id})
    assert moved.status_code == 303
    session.refresh_from_db()
    assert session.project == sales
    sidebar = client.get(reverse("session-list")).content.decode()
    assert sidebar.index("Sales</a>") < sidebar.index("Loose") < sidebar.index("No project") < sidebar.index("Other")
    client.post(reverse("session-project", args=[session.id]), {"project": ""})
    session.refresh_from_db()
    assert session.project is None and other.project is None


@pytest.mark.django_db
def test_a_member_edits_and_the_creator_deletes_leaving_the_sessions_under_no_project(
    client, alice, bob, sales, team_a
):
    session = session_create(team=team_a, user=bob, project=sales)
    client.force_login(bob)
    form = {"team": "team-a", "name": "Sales EU", "instructions": "Answer in pounds.", "default_mode": ""}
    assert client.post(reverse("project-edit", args=[sales.id]), form).status_code == 303
    sales.refresh_from_db()
    assert (sales.name, sales.instructions, sales.default_mode) == ("Sales EU", "Answer in pounds.", "")
    assert client.post(reverse("project-delete", args=[sales.id])).status_code == 403  # not its creator or an owner
    client.force_login(alice)
    assert client.post(reverse("project-delete", args=[sales.id])).status_code == 303
    session.refresh_from_db()
    assert not Project.objects.exists() and session.project is None


@pytest.mark.django_db
def test_outsiders_get_nothing_of_a_project_through_any_page(client, alice, bob, carol, team_a, django_user_model):
    board = project_create(team=team_a, user=alice, name="Board", members=["alice"])
    dave = django_user_model.objects.create_user(username="dave", password="x")
    Membership.objects.create(team=team_a, user=dave)
    bobs = session_create(team=team_a, user=bob)
    for outsider in (carol, dave):
        client.force_login(outsider)
        assert "Board" not in client.get(reverse("projects")).content.decode()
        assert client.get(reverse("project-detail", args=[board.id])).status_code == 404
        assert client.get(reverse("home"), {"project": board.id}).status_code == 404
        assert client.post(reverse("project-edit", args=[board.id]), {"name": "Mine"}).status_code == 404
        assert client.post(reverse("project-delete", args=[board.id])).status_code == 404
    client.force_login(bob)
    assert client.post(reverse("session-project", args=[bobs.id]), {"project": board.id}).status_code == 404
    assert (
        client.post(
            reverse("session-new"),
            {"team": team_a.id, "project": board.id, "mode": "general", "execution": "ask", "message": "hi"},
        ).status_code
        == 404
    )
    for crafted in ("0" * 32, "../x"):
        assert client.get(f"/projects/{crafted}/").status_code == 404
    board.refresh_from_db()
    bobs.refresh_from_db()
    assert board.name == "Board" and bobs.project is None and AgentSession.objects.count() == 1
