"""The admin's automations: admins list every automation with its owner, last run and status and may
pause any (an audit row names them); auditors read automations, runs, the inbox and the audit, and
change nothing; nobody adds or edits an automation there (their owners do)."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Permission
from django.urls import reverse

from automations.models import Automation, AutomationAudit, AutomationRun
from automations.runs import run_claim
from automations.services import automation_create

pytestmark = pytest.mark.django_db


@pytest.fixture
def automation(alice, team_a):
    made, _ = automation_create(
        user=alice, team=team_a, data={"name": "Nightly digest", "prompt": "Digest", "schedule": {"cron": "0 2 * * *"}}
    )
    run_claim(made, trigger="manual")
    return made


@pytest.fixture
def admin_user(django_user_model, password):
    return django_user_model.objects.create_superuser("root", "root@example.com", password)


def test_admins_list_every_automation_with_its_owner_and_last_run(client, admin_user, automation):
    client.force_login(admin_user)
    page = client.get(reverse("admin:automations_automation_changelist")).content.decode()
    assert "Nightly digest" in page and "alice" in page and "queued" in page and "0 2 * * * (UTC)" in page


def test_an_admin_pauses_any_automation_and_the_audit_names_them(client, admin_user, automation):
    client.force_login(admin_user)
    answer = client.post(
        reverse("admin:automations_automation_changelist"),
        {"action": "pause", "_selected_action": [automation.pk]},
        follow=True,
    )
    assert answer.status_code == 200
    automation.refresh_from_db()
    assert not automation.enabled and automation.paused_reason == "Paused by root"
    row = AutomationAudit.objects.get(action="paused")
    assert (row.actor_name, row.automation_id) == ("root", automation.pk)


def test_auditors_read_automations_runs_and_the_audit_and_change_nothing(client, auditor, automation):
    client.force_login(auditor)
    run = AutomationRun.objects.get()
    for name, args in [
        ("admin:automations_automation_changelist", []),
        ("admin:automations_automation_change", [automation.pk]),
        ("admin:automations_automationrun_changelist", []),
        ("admin:automations_automationrun_change", [run.pk]),
        ("admin:automations_automationaudit_changelist", []),
        ("admin:automations_inboxitem_changelist", []),
    ]:
        assert client.get(reverse(name, args=args)).status_code == 200, name
    page = client.get(reverse("admin:automations_automation_changelist")).content.decode()
    assert 'name="action"' not in page  # no pause for a reader
    assert client.post(reverse("admin:automations_automationrun_delete", args=[run.pk])).status_code == 403
    assert client.get(reverse("admin:automations_automation_add")).status_code == 403
    assert Automation.objects.get().enabled


def test_the_webhook_salt_is_not_shown(client, admin_user, alice, team_a):
    made, secret = automation_create(user=alice, team=team_a, data={"name": "Hook", "prompt": "x", "webhook": True})
    client.force_login(admin_user)
    page = client.get(reverse("admin:automations_automation_change", args=[made.pk])).content.decode()
    assert made.webhook_salt not in page and secret not in page


def test_a_staff_member_without_the_permission_sees_nothing(client, django_user_model, password, automation):
    staff = django_user_model.objects.create_user("stan", password=password, is_staff=True)
    client.force_login(staff)
    assert client.get(reverse("admin:automations_automation_changelist")).status_code == 403
    staff.user_permissions.add(Permission.objects.get(codename="view_automation"))
    assert client.get(reverse("admin:automations_automation_changelist")).status_code == 200
