"""Settings → Prompts (/settings/prompts/) and the composer's `/` menu for saved prompts
(/mcp/prompts/ lists them beside the MCP servers' prompts, /prompts/<id>/use/ fills one and counts it).
Alice owns team A, bob is a member of it, carol is in team B."""

from __future__ import annotations

import html as html_module
import json

import pytest
from django.urls import reverse

from agents.models import SavedPrompt
from agents.prompts.services import ERROR_CURATE_FORBIDDEN, prompt_create

pytestmark = pytest.mark.django_db

LIBRARY = "/settings/prompts/"
SHARE_REFUSED = "Only the owners of Team A and administrators share prompts with the team; save it as your own instead."


@pytest.fixture
def shared(alice, team_a):
    return prompt_create(user=alice, title="Release notes", text="Notes for {{version}}.", team=team_a)


def test_signed_out_is_sent_to_sign_in_and_nothing_is_written(client, shared):
    for url in (LIBRARY, reverse("settings-prompt-edit", args=[shared.pk])):
        assert client.get(url).status_code == 302
    assert client.post(LIBRARY, {"title": "T", "text": "x"}).status_code == 302
    assert client.post(reverse("settings-prompt-delete", args=[shared.pk])).status_code == 302
    assert list(SavedPrompt.objects.values_list("title", flat=True)) == ["Release notes"]
    assert client.get("/mcp/prompts/").status_code == 401
    assert client.post(f"/prompts/{shared.pk}/use/", "{}", content_type="application/json").status_code == 401


def test_a_member_saves_their_own_and_reads_the_teams(client, bob, shared):
    client.force_login(bob)
    page = client.get(LIBRARY)
    assert page.status_code == 200
    html = page.content.decode()
    assert "Release notes" in html and "read-only" in html and "by alice" in html
    assert reverse("settings-prompt-edit", args=[shared.pk]) not in html  # no Edit link for a reader
    assert 'name="share"' not in html  # a member has no team to share with

    answer = client.post(LIBRARY, {"title": "Standup", "text": "Yesterday {{done}}, today {{next}}."}, follow=True)
    assert answer.redirect_chain == [(LIBRARY, 302)]
    assert "“Standup” was saved." in answer.content.decode()
    mine = SavedPrompt.objects.get(title="Standup")
    assert (mine.user, mine.team) == (bob, None)
    assert client.get(reverse("settings-prompt-edit", args=[shared.pk])).status_code == 403
    refused = client.post(reverse("settings-prompt-delete", args=[shared.pk]))
    assert refused.status_code == 403
    assert ERROR_CURATE_FORBIDDEN.format(team="Team A") in html_module.unescape(refused.content.decode())
    assert SavedPrompt.objects.filter(pk=shared.pk).exists()


def test_a_member_cannot_share_by_posting_a_team(client, bob):
    client.force_login(bob)
    answer = client.post(LIBRARY, {"title": "Tips", "text": "Be kind.", "share": "team-a"})
    assert answer.status_code == 400
    assert "Select a valid choice" in answer.content.decode()  # the form offers bob no team
    assert not SavedPrompt.objects.exists()


def test_bad_input_names_the_problem_and_writes_nothing(client, bob):
    client.force_login(bob)
    answer = client.post(LIBRARY, {"title": "Greeting", "text": "Hello {{first-name}}"})
    assert answer.status_code == 400
    html = answer.content.decode()
    assert "The variable &quot;{{first-name}}&quot; has a bad name" in html
    assert 'aria-invalid="true"' in html and "Hello {{first-name}}" in html  # the draft is kept
    answer = client.post(LIBRARY, {"title": "", "text": ""})
    assert answer.status_code == 400 and answer.content.decode().count("This field is required.") == 2
    assert not SavedPrompt.objects.exists()


def test_the_owner_edits_unshares_and_deletes(client, alice, bob, shared):
    client.force_login(alice)
    edit = reverse("settings-prompt-edit", args=[shared.pk])
    page = client.get(edit)
    assert page.status_code == 200 and "Everyone in Team A" in page.content.decode()
    answer = client.post(edit, {"title": "Release notes", "text": "Notes for {{version}} on {{date}}.", "share": ""})
    assert answer.status_code == 302
    shared.refresh_from_db()
    assert (shared.team, shared.text) == (None, "Notes for {{version}} on {{date}}.")
    client.force_login(bob)
    assert client.get(edit).status_code == 404  # alice's own now: not bob's to see
    client.force_login(alice)
    assert client.post(reverse("settings-prompt-delete", args=[shared.pk])).status_code == 302
    assert not SavedPrompt.objects.exists()


def test_the_owner_shares_a_new_prompt(client, alice, bob):
    client.force_login(alice)
    assert client.post(LIBRARY, {"title": "Tone", "text": "Be brief.", "share": "team-a"}).status_code == 302
    assert SavedPrompt.objects.get().team.slug == "team-a"
    client.force_login(bob)
    assert "Tone" in client.get(LIBRARY).content.decode()


def test_another_teams_prompts_are_never_shown(client, carol, shared):
    client.force_login(carol)
    assert "Release notes" not in client.get(LIBRARY).content.decode()
    assert client.get(reverse("settings-prompt-edit", args=[shared.pk])).status_code == 404
    assert client.post(reverse("settings-prompt-delete", args=[shared.pk])).status_code == 404
    assert client.get("/mcp/prompts/").json()["saved"] == []
    used = client.post(
        f"/prompts/{shared.pk}/use/", json.dumps({"variables": {"version": "2"}}), content_type="application/json"
    )
    assert used.status_code == 404
    assert SavedPrompt.objects.get().use_count == 0


def test_the_menu_lists_and_fills_saved_prompts(alice, bob, shared):
    from django.test import Client

    page = Client(enforce_csrf_checks=True)
    page.force_login(bob)
    prompt_create(user=bob, title="Mine", text="Just this.")
    listed = page.get("/mcp/prompts/").json()
    assert listed["saved"] == [
        {
            "id": SavedPrompt.objects.get(title="Mine").pk,
            "title": "Mine",
            "description": "Just this.",
            "variables": [],
            "team": None,
        },
        {
            "id": shared.pk,
            "title": "Release notes",
            "description": "Notes for {{version}}.",
            "variables": ["version"],
            "team": "Team A",
        },
    ]
    assert listed["prompts"] == []  # no MCP host in this process
    url = f"/prompts/{shared.pk}/use/"
    body = json.dumps({"variables": {"version": "2.1"}})
    assert page.post(url, body, content_type="application/json").status_code == 403  # no CSRF token
    csrf = page.get("/").cookies["csrftoken"].value
    used = page.post(url, body, content_type="application/json", headers={"X-CSRFToken": csrf})
    assert used.status_code == 200 and used.json()["text"] == "Notes for 2.1." and used.json()["useCount"] == 1
    missing = page.post(url, "{}", content_type="application/json", headers={"X-CSRFToken": csrf})
    assert missing.status_code == 400
    assert missing.json() == {"error": {"message": 'Give a value for "version".', "field": "variables.version"}}
    assert SavedPrompt.objects.get(pk=shared.pk).use_count == 1
