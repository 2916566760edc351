"""The catalog admin's versions: a Save is a version (a draft for whoever may not publish at once), the
mode's page lists them, any two compare side by side, review and publish are checked on the server,
"Try it" opens the curator's own session on the draft, and the catalog's audit trail is read-only."""

from __future__ import annotations

import csv
import html
import io

import pytest
from django.contrib.auth.models import Group
from django.urls import reverse

from agents.models import AgentSession
from agents.sessions import session_create, session_switch_mode
from modes.models import AgentMode, CatalogEvent, ModeVersion
from modes.versions import draft_save
from tests.helpers import mode_admin_form

pytestmark = pytest.mark.django_db


@pytest.fixture
def drafter(django_user_model, password):
    user = django_user_model.objects.create_user("dan", password=password, is_staff=True)
    user.groups.add(Group.objects.get(name="Catalog curators"))
    return user


@pytest.fixture
def reviewer(django_user_model, password):
    user = django_user_model.objects.create_user("rita", password=password, is_staff=True)
    user.groups.add(Group.objects.get(name="Catalog publishers"))
    return user


def text(page: str) -> str:
    """The page's text as read (difflib's table writes spaces as &nbsp;)."""
    return html.unescape(page).replace("\xa0", " ")


def change_url(mode: AgentMode) -> str:
    return reverse("admin:modes_agentmode_change", args=[mode.pk])


def version_url(mode: AgentMode, number: int, action: str) -> str:
    return reverse("admin:modes_agentmode_version", args=[mode.pk, number, action])


def test_a_publishers_save_is_a_new_published_version_and_a_drafters_a_draft(client, curator, drafter, password):
    mode = AgentMode.objects.get(key="general")
    client.login(username=curator.username, password=password)
    form = mode_admin_form(mode, system_prompt="Published at once.", change_note="tone")
    assert client.post(change_url(mode), form).status_code == 302
    mode.refresh_from_db()
    assert (mode.version, mode.system_prompt) == (2, "Published at once.")
    assert mode.versions.get(number=2).note == "tone"

    client.login(username=drafter.username, password=password)
    response = client.post(change_url(mode), mode_admin_form(mode, system_prompt="Only a draft."), follow=True)
    assert "Saved as draft version 3" in response.content.decode()
    mode.refresh_from_db()
    assert (mode.version, mode.system_prompt) == (2, "Published at once.")  # nothing live changed
    page = client.get(change_url(mode)).content.decode()
    assert 'data-version="3" data-state="draft"' in page and 'data-version="2" data-state="published"' in page
    assert 'name="publish-version"' not in page  # not theirs to publish ...
    response = client.post(version_url(mode, 3, "publish"), follow=True)
    assert "Can publish agent modes" in response.content.decode()  # ... nor through a crafted request
    assert AgentMode.objects.get(pk=mode.pk).version == 2


def test_compare_shows_the_prompt_as_a_line_diff_and_lists_by_item(client, curator, password):
    mode = AgentMode.objects.get(key="data-analysis")
    draft_save(
        mode=mode,
        fields={"system_prompt": mode.system_prompt + "\nCite the table.", "tool_policy": ["sql.*", "fresh.*"]},
        author=curator,
    )
    client.login(username=curator.username, password=password)
    page = client.get(reverse("admin:modes_agentmode_compare", args=[mode.pk]) + "?a=1&b=2").content.decode()
    assert "Cite the table." in text(page) and 'class="diff_add"' in page
    assert "Cite the table." in page  # real spaces (not difflib's &nbsp;): a long line wraps between words
    assert '<li class="item-added">fresh.*</li>' in page
    assert 'data-field="tools"' in page and "tools (changed)" in page


def test_two_person_review_in_the_admin(client, settings, curator, reviewer, password):
    settings.APTIX_CATALOG_REVIEW = "two-person"
    mode = AgentMode.objects.get(key="general")
    client.login(username=curator.username, password=password)
    client.post(change_url(mode), mode_admin_form(mode, system_prompt="Needs a second pair of eyes."))
    assert AgentMode.objects.get(pk=mode.pk).version == 1  # under review even a publisher's save is a draft
    response = client.post(version_url(mode, 2, "publish"), follow=True)
    assert "waiting for review" in response.content.decode()
    assert ModeVersion.objects.get(mode=mode, number=2).state == "pending"
    review = client.get(version_url(mode, 2, "review")).content.decode()
    assert "another publisher has to approve it" in review and 'name="approve"' not in review
    client.post(version_url(mode, 2, "approve"))  # a crafted request: refused all the same
    assert ModeVersion.objects.get(mode=mode, number=2).state == "pending"

    client.login(username=reviewer.username, password=password)
    review = client.get(version_url(mode, 2, "review")).content.decode()
    assert "Needs a second pair of eyes." in text(review) and 'name="approve"' in review
    client.post(version_url(mode, 2, "approve"), {"comment": "Looks right"})
    version = ModeVersion.objects.get(mode=mode, number=2)
    assert (version.state, version.reviewer, version.review_comment) == ("approved", reviewer, "Looks right")
    client.post(version_url(mode, 2, "publish"))
    assert AgentMode.objects.get(pk=mode.pk).system_prompt == "Needs a second pair of eyes."


def test_without_two_person_review_a_draft_is_published_not_approved(client, curator, password):
    mode = AgentMode.objects.get(key="general")
    draft_save(mode=mode, fields={"system_prompt": "My own draft."}, author=curator)
    client.login(username=curator.username, password=password)
    review = client.get(version_url(mode, 2, "review")).content.decode()
    assert 'name="publish-version"' in review  # review is off: its author may publish it ...
    assert "another publisher has to approve it" not in review and 'name="approve"' not in review  # ... no approval
    assert 'name="reject"' in review  # a draft can still be set aside


def test_restore_from_the_admin_is_a_new_version(client, curator, password):
    mode = AgentMode.objects.get(key="general")
    original = mode.system_prompt
    client.login(username=curator.username, password=password)
    client.post(change_url(mode), mode_admin_form(mode, system_prompt="Second."))
    assert 'name="restore-version"' in client.get(change_url(mode)).content.decode()
    client.post(version_url(mode, 1, "publish"))
    mode.refresh_from_db()
    assert (mode.version, mode.system_prompt) == (3, original)


def test_try_it_opens_the_curators_own_session_on_the_draft(client, curator, team_a, password):
    team_a.memberships.create(user=curator)
    mode = AgentMode.objects.get(key="general")
    draft = draft_save(mode=mode, fields={"system_prompt": "Draft prompt."}, author=curator)
    client.login(username=curator.username, password=password)
    response = client.post(version_url(mode, draft.number, "try"))
    session = AgentSession.objects.get(user=curator)
    assert response["Location"] == reverse("session-detail", args=[session.id])
    assert (session.mode, session.mode_draft) == ("general", draft)
    page = client.get(response["Location"]).content.decode()
    assert 'data-draft="draft v2"' in page
    client.post(version_url(mode, 1, "try"))  # the published version is no draft to try
    assert AgentSession.objects.filter(user=curator).count() == 1


def test_the_catalog_audit_trail_is_read_only_and_exported_by_auditors(client, curator, auditor, password):
    draft_save(mode="general", fields={"description": "=cmd()"}, author=curator, note="=SUM(A1)")
    event = CatalogEvent.objects.get()
    client.login(username=auditor.username, password=password)
    url = reverse("admin:modes_catalogevent_changelist")
    assert "1 catalog event" in client.get(f"{url}?action=draft_saved").content.decode()
    assert "0 catalog events" in client.get(f"{url}?action=published").content.decode()
    assert client.get(reverse("admin:modes_catalogevent_add")).status_code == 403
    assert client.post(reverse("admin:modes_catalogevent_delete", args=[event.pk]), {"post": "yes"}).status_code == 403
    export = client.post(url, {"action": "export_csv", "_selected_action": [event.pk]})
    rows = list(csv.reader(io.StringIO(export.content.decode())))
    assert rows[0] == ["created_at", "user", "action", "mode", "version", "note"]
    assert rows[1][1:] == ["curtis", "draft_saved", "general", "2", "'=SUM(A1)"]


def test_activating_and_deactivating_from_the_list_are_audited_catalog_actions(client, curator, password):
    client.login(username=curator.username, password=password)
    url = reverse("admin:modes_agentmode_changelist")
    general, data = AgentMode.objects.get(key="general"), AgentMode.objects.get(key="data-analysis")
    client.post(url, {"action": "deactivate", "_selected_action": [data.pk, general.pk]})
    data.refresh_from_db()
    general.refresh_from_db()
    assert (data.is_active, general.is_active) == (False, True)  # the default stays active
    client.post(url, {"action": "activate", "_selected_action": [data.pk]})
    rows = [(e.action, e.mode_key, e.user) for e in CatalogEvent.objects.order_by("id")]
    assert rows == [("deactivated", "data-analysis", curator), ("activated", "data-analysis", curator)]
    assert AgentMode.objects.get(pk=data.pk).version == 1  # not a version


def test_the_mode_history_export_has_the_version_the_session_moved_to(client, auditor, password, team_a, alice):
    session = session_create(team=team_a, user=alice, title="Numbers")
    session_switch_mode(session=session, mode="data-analysis", user=alice)
    entry = session.mode_history.get()
    client.login(username=auditor.username, password=password)
    url = reverse("admin:modes_modehistory_changelist")
    export = client.post(url, {"action": "export_csv", "_selected_action": [entry.pk]})
    header, row = list(csv.reader(io.StringIO(export.content.decode())))
    assert row[header.index("mode_version")] == "1"
