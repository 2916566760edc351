"""Projects on the JSON API (bearer token): `GET|POST /api/v1/projects`, `GET|PATCH|DELETE
/api/v1/projects/<id>`, and `"projectId"` on `POST /api/v1/agent/execute`. Alice owns team A, bob is
a member of it, carol is in team B: nothing of team A's projects reaches carol, nor a chosen-members
project anyone left out of it, whatever id they send."""

from __future__ import annotations

import json

import pytest
from asgiref.sync import sync_to_async

from agents.models import AgentSession
from aptix.tokens import api_token_create
from projects.models import Project
from projects.services import ERROR_DELETE, ERROR_MANAGE_MEMBERS, ERROR_NAME_TAKEN, project_create
from tests.helpers import ServerLikeAsyncClient, async_db

LIST = "/api/v1/projects"
EXECUTE = "/api/v1/agent/execute"


def _auth(user) -> dict[str, str]:
    return {"HTTP_AUTHORIZATION": f"Bearer {api_token_create(user=user)[1]}"}


def _send(client, method: str, url: str, user, body: dict | None = None) -> tuple[int, dict]:
    data = json.dumps(body) if body is not None else ""
    response = getattr(client, method)(url, data, content_type="application/json", **_auth(user))
    return response.status_code, (response.json() if response.content else {})


@pytest.mark.django_db
def test_a_project_is_made_read_changed_and_deleted(client, alice, bob):
    body = {
        "name": "Sales",
        "description": "The quarter's numbers",
        "instructions": "Answer in euros.",
        "defaultMode": "data-analysis",
        "members": None,
    }
    status, made = _send(client, "post", LIST, alice, body)
    assert status == 201
    assert {k: made[k] for k in (*body, "team", "wholeTeam")} == {
        **body,
        "members": ["alice", "bob"],
        "team": "team-a",
        "wholeTeam": True,
    }
    assert len(made["id"]) == 32 and Project.objects.get().created_by == alice
    assert _send(client, "get", f"{LIST}/{made['id']}", bob) == (200, made)
    assert _send(client, "get", LIST, bob) == (200, {"projects": [made]})

    status, changed = _send(
        client, "patch", f"{LIST}/{made['id']}", bob, {"instructions": "Pounds.", "defaultMode": None}
    )
    assert status == 200 and (changed["instructions"], changed["defaultMode"]) == ("Pounds.", None)
    assert changed["name"] == "Sales"  # what is not sent stays
    status, refused = _send(client, "patch", f"{LIST}/{made['id']}", bob, {"members": ["bob"]})
    assert status == 403 and refused["error"]["message"] == ERROR_MANAGE_MEMBERS
    status, refused = _send(client, "delete", f"{LIST}/{made['id']}", bob)
    assert status == 403 and refused["error"]["message"] == ERROR_DELETE
    status, chosen = _send(client, "patch", f"{LIST}/{made['id']}", alice, {"members": ["bob"]})
    assert status == 200 and chosen["members"] == ["bob"] and chosen["wholeTeam"] is False
    assert _send(client, "get", f"{LIST}/{made['id']}", alice)[0] == 404  # alice chose to leave it
    assert _send(client, "delete", f"{LIST}/{made['id']}", bob)[0] == 403
    Project.objects.update(created_by=bob)
    assert _send(client, "delete", f"{LIST}/{made['id']}", bob) == (204, {})
    assert not Project.objects.exists()


@pytest.mark.django_db
def test_bad_fields_are_a_400_naming_them_and_write_nothing(client, alice, carol):
    project_create(team=alice.teams.get(), user=alice, name="Sales")
    cases = [
        ({"description": "no name"}, "name", "'name' is required."),
        ({"name": "SALES"}, "name", ERROR_NAME_TAKEN),
        ({"name": "X", "defaultMode": "nope"}, "defaultMode", None),
        ({"name": "X", "members": ["carol"]}, "members", "'carol' is not a member of the project's team."),
        ({"name": "X", "members": "alice"}, "members", None),
        ({"name": "X", "team": "team-b"}, "team", "'team' must be the slug of one of your teams."),
        ({"name": "X", "color": "red"}, "color", None),
        ({"name": ["X"]}, "name", "'name' must be text."),
    ]
    for body, field, message in cases:
        status, refused = _send(client, "post", LIST, alice, body)
        assert (status, refused["error"]["field"]) == (400, field), body
        assert message is None or refused["error"]["message"] == message
    assert Project.objects.count() == 1


@pytest.mark.django_db
def test_outsiders_get_404_and_no_token_gets_401(client, alice, bob, carol, django_user_model, team_a):
    board = project_create(team=team_a, user=alice, name="Board", members=["alice"])
    sales = project_create(team=team_a, user=alice, name="Sales")
    assert _send(client, "get", LIST, carol) == (200, {"projects": []})
    assert [p["name"] for p in _send(client, "get", LIST, bob)[1]["projects"]] == ["Sales"]
    for user, project in ((carol, board), (carol, sales), (bob, board)):
        url = f"{LIST}/{project.id}"
        for method, body in (("get", None), ("patch", {"name": "Mine"}), ("delete", None)):
            status, refused = _send(client, method, url, user, body)
            assert (status, refused["error"]["field"]) == (404, "id")
    for crafted in ("0" * 32, "x" * 32):
        assert _send(client, "get", f"{LIST}/{crafted}", alice)[0] == 404
    assert client.get(LIST).status_code == 401
    assert client.get(f"{LIST}/{sales.id}").status_code == 401
    assert sorted(Project.objects.values_list("name", flat=True)) == ["Board", "Sales"]


async def _execute(body: dict, user) -> tuple[int, dict]:
    _, secret = await sync_to_async(api_token_create)(user=user)
    response = await ServerLikeAsyncClient().post(
        EXECUTE, data=json.dumps(body), content_type="application/json", headers={"Authorization": f"Bearer {secret}"}
    )
    return response.status_code, json.loads(response.content)


@async_db
async def test_project_id_starts_a_conversation_in_the_project(llm, model, alice, bob, team_a):
    sales = await sync_to_async(project_create)(
        team=team_a, user=alice, name="Sales", instructions="Answer in euros.", default_mode="data-analysis"
    )
    model.reply("1.2 M€")
    status, body = await _execute({"message": "Q3?", "projectId": sales.id}, bob)
    assert status == 200 and body["status"] == "completed" and body["mode"] == "data-analysis"
    session = await AgentSession.objects.aget(pk=body["conversationId"])
    assert (session.project_id, session.user_id) == (sales.id, bob.id)
    assert "## Sales\nAnswer in euros." in model.last_messages[0]["content"]
    status, refused = await _execute(
        {"message": "more", "projectId": sales.id, "conversationId": body["conversationId"]}, bob
    )
    assert status == 400 and refused["error"]["field"] == "projectId"


@async_db
async def test_project_id_of_someone_elses_project_is_a_404_and_starts_nothing(llm, model, alice, carol, team_a):
    board = await sync_to_async(project_create)(team=team_a, user=alice, name="Board")
    for project_id in (board.id, "0" * 32, "not-an-id"):
        status, refused = await _execute({"message": "hi", "projectId": project_id}, carol)
        assert (status, refused["error"]["field"]) == (404, "projectId")
    status, refused = await _execute({"message": "hi", "projectId": 7}, carol)
    assert (status, refused["error"]["field"]) == (400, "projectId")
    assert await AgentSession.objects.acount() == 0
