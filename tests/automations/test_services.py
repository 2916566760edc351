"""Automations are written by one service: every bad value is refused naming its field (nothing
saved); creating, changing, pausing, resuming and deleting are audit rows, and so is each tool added to
or taken from the pre-approved list; the webhook's secret is derived, never stored, and answered once."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.core.exceptions import ValidationError
from django.utils import timezone

from automations.models import Automation, AutomationAudit
from automations.services import (
    AutomationNotFoundError,
    automation_create,
    automation_delete,
    automation_get,
    automation_pause,
    automation_resume,
    automation_update,
    webhook_secret,
)

pytestmark = pytest.mark.django_db
BASE = {"name": "Weekly", "prompt": "Summarise {date}"}


def refused(alice, team_a, **data) -> dict:
    with pytest.raises(ValidationError) as caught:
        automation_create(user=alice, team=team_a, data={**BASE, **data})
    assert not Automation.objects.exists()
    return caught.value.message_dict


@pytest.mark.parametrize(
    ("data", "field", "words"),
    [
        ({"schedule": {"cron": "61 * * * *", "timezone": "UTC"}}, "cron", "Not a cron expression"),
        ({"schedule": {"cron": "0 8 * * 1", "timezone": "Nowhere/Land"}}, "timezone", "Unknown time zone"),
        ({"schedule": "daily"}, "schedule", "A schedule is"),
        ({"mode": "no-such-mode"}, "mode", "no-such-mode"),
        ({"model": "gpt-none"}, "model", "Unknown model 'gpt-none'"),
        ({"execution": "auto"}, "execution", "'ask', 'agent'"),
        ({"overlap": "both"}, "overlap", "'skip', 'queue'"),
        ({"allowedTools": ["image_gen", "rm__rf"]}, "allowedTools[1]", "Unknown tool 'rm__rf'"),
        ({"allowedTools": ["agent_change_mode"]}, "allowedTools[0]", "always ask a person"),
        ({"approvalTimeoutHours": 0}, "approvalTimeoutHours", "from 1 to 720"),
        ({"runAt": "tomorrow"}, "runAt", "ISO 8601"),
        ({"runAt": "2020-01-01T08:00:00Z"}, "runAt", "in the past"),
        ({"catchUp": "yes"}, "catchUp", "true or false"),
        ({"projectId": "0" * 32}, "projectId", "No project"),
        ({"conversationId": "0" * 32}, "conversationId", "No conversation"),
        ({"delegate": "carol"}, "delegate", "another active member"),
        ({"colour": "red"}, "colour", "Unknown field 'colour'"),
        ({"name": "  "}, "name", "non-empty"),
    ],
)
def test_a_bad_value_is_refused_naming_its_field(alice, team_a, carol, data, field, words):
    errors = refused(alice, team_a, **data)
    assert list(errors) == [field] and words in errors[field][0]


def test_a_prompt_is_required(alice, team_a):
    with pytest.raises(ValidationError) as caught:
        automation_create(user=alice, team=team_a, data={"name": "x"})
    assert caught.value.message_dict == {"prompt": ["This field is required."]}


def test_every_change_is_an_audit_row(alice, team_a, bob):
    run_at = timezone.now() + timedelta(days=1)
    automation, secret = automation_create(
        user=alice,
        team=team_a,
        data={**BASE, "schedule": {"cron": "0 8 * * 1", "timezone": "Europe/Paris"}, "allowedTools": ["image_gen"]},
    )
    assert secret is None and automation.next_run_at > timezone.now()
    automation_update(
        user=alice, automation=automation, data={"allowedTools": ["files_query"], "runAt": run_at.isoformat()}
    )
    automation_pause(automation=automation, by=alice)
    automation_resume(automation=automation, by=alice)
    automation_delete(automation=automation, by=alice)
    rows = list(AutomationAudit.objects.order_by("at", "id").values_list("action", "detail", "actor_name"))
    assert [row[0] for row in rows] == [
        "created",
        "tool_allowed",
        "changed",
        "tool_allowed",
        "tool_disallowed",
        "paused",
        "resumed",
        "changed",
        "deleted",
    ]
    assert "cron 0 8 * * 1 (Europe/Paris)" in rows[0][1] and rows[1][1] == "image_gen"
    assert {row[2] for row in rows} == {"alice"}


def test_the_webhook_secret_is_answered_once_and_never_stored(alice, team_a):
    automation, secret = automation_create(user=alice, team=team_a, data={**BASE, "webhook": True})
    assert secret and secret.startswith("whsec_") and secret == webhook_secret(automation)
    stored = Automation.objects.filter(pk=automation.pk).values().get()
    assert secret not in str(stored)
    again, none = automation_update(user=alice, automation=automation, data={"name": "Renamed"})
    assert none is None
    _, off = automation_update(user=alice, automation=again, data={"webhook": False})
    _, new = automation_update(user=alice, automation=again, data={"webhook": True})
    assert off is None and new and new != secret  # turned on again: a new secret


def test_only_the_owner_gets_an_automation(alice, bob, carol, team_a):
    automation, _ = automation_create(user=alice, team=team_a, data=BASE)
    assert automation_get(user=alice, automation_id=automation.pk) == automation
    for other in (bob, carol):  # a teammate, another team's user
        with pytest.raises(AutomationNotFoundError):
            automation_get(user=other, automation_id=automation.pk)
