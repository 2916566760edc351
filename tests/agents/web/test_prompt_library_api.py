"""The prompt library on the JSON API (bearer token): `GET|POST /api/v1/prompts`, `GET|PATCH|DELETE
/api/v1/prompts/<id>`, `POST /api/v1/prompts/<id>/use`. Alice owns team A, bob is a member of it,
carol is in team B: bob's and alice's own prompts are theirs alone, a prompt shared with team A is
listed to both and curated by alice, and nothing of team A's reaches carol."""

from __future__ import annotations

import json

import pytest

from agents.models import SavedPrompt
from agents.prompts.services import ERROR_TEXT_EMPTY, ERROR_TITLE_EMPTY, ERROR_TITLE_TOO_LONG, TITLE_MAX
from aptix.models import Membership, Team
from aptix.tokens import api_token_create

pytestmark = pytest.mark.django_db

LIST = "/api/v1/prompts"
SHARE_REFUSED = "Only the owners of Team A and administrators share prompts with the team; save it as your own instead."


def _auth(user) -> dict[str, str]:
    return {"HTTP_AUTHORIZATION": f"Bearer {api_token_create(user=user)[1]}"}


def _send(client, method: str, url: str, user, body: dict | None = None) -> tuple[int, dict]:
    data = json.dumps(body) if body is not None else ""
    response = getattr(client, method)(url, data, content_type="application/json", **_auth(user))
    return response.status_code, (response.json() if response.content else {})


def _listed(client, user) -> list[str]:
    status, body = _send(client, "get", LIST, user)
    assert status == 200
    return [p["title"] for p in body["prompts"]]


def test_a_prompt_is_created_with_its_variables(client, bob):
    body = {
        "title": "Summarise",
        "text": "Summarise {{topic}} for {{ audience }}, then {{topic}} again.",
        "shared": False,
    }
    status, created = _send(client, "post", LIST, bob, body)
    assert status == 201
    assert {k: created[k] for k in ("title", "text", "shared", "variables", "useCount", "team")} == {
        "title": "Summarise",
        "text": body["text"],
        "shared": False,
        "variables": ["topic", "audience"],
        "useCount": 0,
        "team": None,
    }
    row = SavedPrompt.objects.get(pk=created["id"])
    assert (row.user, row.team, row.title) == (bob, None, "Summarise")
    status, one = _send(client, "get", f"{LIST}/{created['id']}", bob)
    assert status == 200 and one == created


def test_the_owner_shares_with_the_team_and_members_see_it_read_only(client, alice, bob, carol):
    status, shared = _send(
        client, "post", LIST, alice, {"title": "Release notes", "text": "Notes for {{v}}", "shared": True}
    )
    assert status == 201 and shared["shared"] is True and shared["team"] == "team-a" and shared["variables"] == ["v"]
    _send(client, "post", LIST, bob, {"title": "Bob's own", "text": "Mine", "shared": False})

    status, listed = _send(client, "get", LIST, bob)
    assert [(p["title"], p["shared"], p["editable"]) for p in listed["prompts"]] == [
        ("Bob's own", False, True),
        ("Release notes", True, False),
    ]
    assert _listed(client, alice) == ["Release notes"]  # bob's own are his alone
    assert _listed(client, carol) == []  # another team's are never listed
    assert _send(client, "get", f"{LIST}/{shared['id']}", carol)[0] == 404
    assert _send(client, "post", f"{LIST}/{shared['id']}/use", carol, {"variables": {"v": "1"}})[0] == 404
    assert _send(client, "patch", f"{LIST}/{shared['id']}", carol, {"title": "Mine now"})[0] == 404
    assert _send(client, "delete", f"{LIST}/{shared['id']}", carol)[0] == 404

    status, refused = _send(client, "patch", f"{LIST}/{shared['id']}", bob, {"title": "Bob's notes"})
    assert status == 403
    assert refused["error"] == {
        "message": "This prompt is shared with Team A: only the team's owners and administrators change, "
        "unshare or delete it.",
        "field": "shared",
    }
    assert _send(client, "delete", f"{LIST}/{shared['id']}", bob)[0] == 403
    assert SavedPrompt.objects.get(pk=shared["id"]).title == "Release notes"


def test_a_member_may_not_share(client, bob):
    status, body = _send(client, "post", LIST, bob, {"title": "Team tips", "text": "Be kind.", "shared": True})
    assert (status, body) == (403, {"error": {"message": SHARE_REFUSED, "field": "shared"}})
    assert not SavedPrompt.objects.exists()
    _, own = _send(client, "post", LIST, bob, {"title": "Team tips", "text": "Be kind."})
    status, body = _send(client, "patch", f"{LIST}/{own['id']}", bob, {"shared": True})
    assert (status, body["error"]["field"]) == (403, "shared")
    assert SavedPrompt.objects.get().team is None


def test_an_administrator_shares_in_a_team_they_are_in(client, django_user_model, team_a):
    admin = django_user_model.objects.create_superuser("root", password="x")
    Membership.objects.create(team=team_a, user=admin)  # a plain member, but an administrator
    status, body = _send(client, "post", LIST, admin, {"title": "Policy", "text": "Follow policy.", "shared": True})
    assert status == 201 and body["team"] == "team-a"


def test_the_owner_curates_a_shared_prompt(client, alice, bob):
    _, shared = _send(client, "post", LIST, alice, {"title": "Notes", "text": "Notes", "shared": True})
    status, changed = _send(client, "patch", f"{LIST}/{shared['id']}", alice, {"text": "Notes for {{release}}"})
    assert status == 200 and changed["variables"] == ["release"] and changed["shared"] is True
    status, unshared = _send(client, "patch", f"{LIST}/{shared['id']}", alice, {"shared": False})
    assert status == 200 and unshared["shared"] is False and unshared["team"] is None
    assert _listed(client, bob) == []  # back to its author's own
    assert _send(client, "delete", f"{LIST}/{shared['id']}", alice)[0] == 204
    assert not SavedPrompt.objects.exists()


def test_several_teams_say_which(client, alice, team_b):
    Membership.objects.create(team=team_b, user=alice, role=Membership.Role.OWNER)
    status, body = _send(client, "post", LIST, alice, {"title": "T", "text": "x", "shared": True})
    assert (status, body["error"]["field"]) == (400, "team")
    assert "team-a, team-b" in body["error"]["message"]
    status, body = _send(client, "post", LIST, alice, {"title": "T", "text": "x", "shared": True, "team": "team-b"})
    assert status == 201 and body["team"] == "team-b"
    other = Team.objects.create(name="Team C", slug="team-c")
    status, body = _send(client, "post", LIST, alice, {"title": "T", "text": "x", "shared": True, "team": other.slug})
    assert (status, body["error"]) == (400, {"message": 'You are not a member of a team "team-c".', "field": "team"})


@pytest.mark.parametrize(
    ("body", "field", "message"),
    [
        ({"title": "  ", "text": "x"}, "title", ERROR_TITLE_EMPTY),
        ({"text": "x"}, "title", ERROR_TITLE_EMPTY),
        ({"title": "t" * (TITLE_MAX + 1), "text": "x"}, "title", ERROR_TITLE_TOO_LONG),
        ({"title": "T", "text": ""}, "text", ERROR_TEXT_EMPTY),
        ({"title": "T", "text": "x" * 20_001}, "text", "The text is longer than 20000 characters."),
        (
            {"title": "T", "text": "Hello {{first name}}"},
            "text",
            'The variable "{{first name}}" has a bad name: a variable\'s name is letters, digits and underscores, '
            "as in {{topic}}.",
        ),
        ({"title": "T", "text": "x", "shared": "yes"}, "shared", "'shared' must be true or false."),
        (
            {"title": "T", "text": "x", "owner": "me"},
            "owner",
            "Unknown field 'owner': a prompt has title, text, shared, team.",
        ),
        ({"title": "T", "text": "x\u0000"}, "text", "'text' contains a NUL character."),
    ],
)
def test_bad_input_is_refused_naming_the_field(client, bob, body, field, message):
    status, answer = _send(client, "post", LIST, bob, body)
    assert (status, answer) == (400, {"error": {"message": message, "field": field}})
    assert not SavedPrompt.objects.exists()


def test_use_fills_the_variables_and_counts(client, alice, bob):
    _, shared = _send(
        client,
        "post",
        LIST,
        alice,
        {"title": "Greet", "text": "Greet {{name}} ({{name}}) in {{lang}}.", "shared": True},
    )
    url = f"{LIST}/{shared['id']}/use"
    status, used = _send(client, "post", url, bob, {"variables": {"name": "Ada", "lang": "French", "extra": "x"}})
    assert (status, used) == (
        200,
        {"id": shared["id"], "title": "Greet", "text": "Greet Ada (Ada) in French.", "useCount": 1},
    )
    status, missing = _send(client, "post", url, bob, {"variables": {"name": "Ada", "lang": " "}})
    assert (status, missing["error"]) == (400, {"message": 'Give a value for "lang".', "field": "variables.lang"})
    status, bad = _send(client, "post", url, bob, {"variables": ["Ada"]})
    assert (status, bad["error"]["field"]) == (400, "variables")
    _send(
        client, "post", url, alice, {"variables": {"name": "{{lang}}", "lang": "Dutch"}}
    )  # values are not filled again
    status, one = _send(client, "get", f"{LIST}/{shared['id']}", bob)
    assert one["useCount"] == 2 and one["lastUsedAt"]
    assert SavedPrompt.objects.get().use_count == 2


def test_auth_comes_first(client, bob):
    prompt = SavedPrompt.objects.create(user=bob, title="Mine", text="x")
    assert client.get(LIST).status_code == 401
    assert client.get(f"{LIST}/{prompt.pk}", HTTP_AUTHORIZATION="Bearer wrong").status_code == 401
    assert client.post(f"{LIST}/{prompt.pk}/use", "{}", content_type="application/json").status_code == 401
    assert client.delete(f"{LIST}/{prompt.pk}").status_code == 401
    assert SavedPrompt.objects.filter(pk=prompt.pk).exists()
    assert _send(client, "put", LIST, bob, {})[0] == 405
    assert _send(client, "get", f"{LIST}/{prompt.pk}/use", bob)[0] == 405


def test_another_users_own_prompt_is_not_found(client, alice, bob):
    prompt = SavedPrompt.objects.create(user=bob, title="Mine", text="x")
    for method in ("get", "patch", "delete"):
        status, body = _send(
            client, method, f"{LIST}/{prompt.pk}", alice, {"title": "x"} if method == "patch" else None
        )
        assert (status, body) == (404, {"error": {"message": "No prompt with this id.", "field": "id"}})
    assert SavedPrompt.objects.get().title == "Mine"
