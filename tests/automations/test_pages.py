"""The automations' pages and the inbox over HTTP: a user sees and changes only their own automations
(anyone else's is a 404), the form maps to the services and shows their refusals on the field, Run
now starts a manual run, and the inbox decides approvals (the owner's or the delegate's) so the run
resumes, dismisses notices, and feeds the header's bell."""

from __future__ import annotations

import asyncio
import json
import re
from datetime import timedelta

import pytest
from asgiref.sync import sync_to_async
from django.urls import reverse
from django.utils import timezone
from django.utils.html import escape

from agents.models import ToolApproval, Turn
from agents.run.runners import LocalRunner
from agents.runner import use_runner
from aptix.preferences import preferences_get
from automations.inbox import notice
from automations.models import Automation, AutomationRun, InboxItem
from automations.runs import run_begin, run_claim
from automations.schedule import ERROR_CRON_FIELDS
from automations.services import automation_create, webhook_secret
from automations.web.views import NO_TEAM, RUN_SKIPPED
from tests.helpers import ServerLikeAsyncClient, async_db

FORM = {
    "name": "Monday revenue",
    "prompt": "Summarise the revenue of the week before {date}",
    "mode": "",
    "execution": "agent",
    "model": "",
    "project": "",
    "conversation": "",
    "cron": "0 8 * * 1",
    "timezone": "Europe/Paris",
    "run_at": "",
    "approval_timeout_hours": "12",
    "catch_up": "on",
    "overlap": "queue",
    "max_retries": "1",
    "delegate": "",
    "enabled": "on",
}


class RecordingRunner:
    """Records what it is asked to start, runs nothing (the turn stays queued)."""

    kind = "recording"

    def __init__(self) -> None:
        self.started: list[str] = []

    def start(self, turn_id, *, client_tools=None, tool_results=None):
        self.started.append(turn_id)
        return asyncio.get_running_loop().create_future()

    def orphan_candidates(self, turns, now):
        return turns


def make(user, team, **data) -> Automation:
    data.setdefault("prompt", "Summarise the week of {date}")
    automation, _ = automation_create(user=user, team=team, data=data)
    return automation


def signed_in(client, user, password):
    client.login(username=user.username, password=password)
    return client


@pytest.mark.django_db
def test_the_list_shows_only_the_users_own_automations(client, alice, bob, carol, team_a, team_b, password):
    make(alice, team_a, name="Alice's digest", schedule={"cron": "0 8 * * 1", "timezone": "Europe/Paris"})
    make(bob, team_a, name="Bob's digest")
    make(carol, team_b, name="Carol's digest")
    html = signed_in(client, alice, password).get(reverse("automations")).content.decode()
    assert "Alice&#x27;s digest" in html and "Bob" not in html and "Carol" not in html
    assert "<code>0 8 * * 1</code>" in html and "Europe/Paris" in html and "Never run" in html
    assert f'href="{reverse("automation-new")}"' in html and f'href="{reverse("automations")}"' in html  # button, nav


@pytest.mark.django_db
def test_anyone_elses_automation_is_a_404_on_every_page_and_button(client, alice, bob, carol, team_a, password):
    automation = make(alice, team_a, name="Alice's digest")
    for user in (bob, carol):
        signed_in(client, user, password)
        for name, method in [
            ("automation-detail", "get"),
            ("automation-edit", "get"),
            ("automation-edit", "post"),
            ("automation-run-now", "post"),
            ("automation-toggle", "post"),
            ("automation-delete", "post"),
        ]:
            url = reverse(name, args=[automation.pk])
            response = client.get(url) if method == "get" else client.post(url, {**FORM, "name": "Taken"})
            assert response.status_code == 404, (user.username, name, method)
            assert b"Alice" not in response.content
    automation.refresh_from_db()
    assert automation.name == "Alice's digest" and automation.enabled and not automation.runs.exists()
    client.logout()
    for url in (
        reverse("automation-toggle", args=[automation.pk]),
        reverse("automation-run-now", args=[automation.pk]),  # an async view
        reverse("inbox-decide", args=[1]),
    ):
        response = client.post(url, {"decision": "approve"})
        assert response.status_code == 302 and response["Location"].startswith("/login/"), url
    assert not automation.runs.exists()


@pytest.mark.django_db
def test_someone_in_no_team_is_told_why_they_cannot_make_one(client, django_user_model, password):
    loner = django_user_model.objects.create_user(username="loner", password=password)
    signed_in(client, loner, password)
    assert NO_TEAM in client.get(reverse("automations")).content.decode()
    response = client.get(reverse("automation-new"))
    assert response.status_code == 403 and NO_TEAM in response.content.decode()
    assert client.post(reverse("automation-new"), FORM).status_code == 403 and not Automation.objects.exists()


@pytest.mark.django_db
def test_the_form_creates_an_automation_in_the_services_terms(client, alice, bob, password):
    signed_in(client, alice, password)
    page = client.get(reverse("automation-new")).content.decode()
    assert "{payload.&lt;field&gt;}" in page and 'value="notes__add_note"' not in page  # no such tool registered
    assert 'value="agent_change_mode"' not in page and 'value="bob"' in page
    data = {**FORM, "run_at": "2031-03-01T09:30", "delegate": "bob", "allowed_tools": ["image_gen"]}
    response = client.post(reverse("automation-new"), data)
    automation = Automation.objects.get(owner=alice)
    assert response.status_code == 302 and response["Location"] == reverse("automation-detail", args=[automation.pk])
    assert (automation.cron, automation.timezone, automation.overlap, automation.max_retries) == (
        "0 8 * * 1",
        "Europe/Paris",
        "queue",
        1,
    )
    assert automation.allowed_tools == ["image_gen"] and automation.delegate == bob
    assert automation.run_at.isoformat() == "2031-03-01T08:30:00+00:00"  # 09:30 in Paris
    assert automation.approval_timeout_hours == 12 and automation.catch_up and not automation.webhook
    detail = client.get(response["Location"]).content.decode()
    assert "Monday revenue" in detail and "bob may answer them too" in detail and "whsec_" not in detail


@pytest.mark.django_db
def test_a_bad_cron_is_shown_on_its_field_and_nothing_is_saved(client, alice, password):
    signed_in(client, alice, password)
    response = client.post(reverse("automation-new"), {**FORM, "cron": "every monday"})
    html = response.content.decode()
    assert response.status_code == 400 and not Automation.objects.exists()
    error = re.search(r'<div class="error" id="id_cron-error" role="alert">([^<]*)</div>', html)
    assert error and error.group(1) == ERROR_CRON_FIELDS
    assert re.search(r'<input[^>]*name="cron"[^>]*aria-invalid="true"[^>]*aria-describedby="id_cron-error"', html)
    response = client.post(reverse("automation-new"), {**FORM, "timezone": "Mars/Olympus"})
    assert response.status_code == 400 and 'id="id_timezone-error"' in response.content.decode()
    assert not Automation.objects.exists()


@pytest.mark.django_db
def test_edit_changes_it_and_pause_resume_and_delete_work(client, alice, team_a, password):
    automation = make(alice, team_a, name="Digest")
    signed_in(client, alice, password)
    form = client.get(reverse("automation-edit", args=[automation.pk])).content.decode()
    assert 'value="Digest"' in form
    response = client.post(reverse("automation-edit", args=[automation.pk]), {**FORM, "name": "Digest 2"})
    automation.refresh_from_db()
    assert response.status_code == 302 and automation.name == "Digest 2" and automation.cron == "0 8 * * 1"
    client.post(reverse("automation-toggle", args=[automation.pk]))
    automation.refresh_from_db()
    assert not automation.enabled
    assert "Paused by a person" in client.get(reverse("automation-detail", args=[automation.pk])).content.decode()
    client.post(reverse("automation-toggle", args=[automation.pk]))
    automation.refresh_from_db()
    assert automation.enabled
    response = client.post(reverse("automation-delete", args=[automation.pk]))
    assert response.status_code == 302 and not Automation.objects.exists()


@pytest.mark.django_db
def test_editing_one_whose_run_once_time_passed_keeps_that_time(client, alice, team_a, password):
    automation = make(alice, team_a, name="Digest", runAt="2031-03-01T08:30:00+00:00")
    passed = timezone.now() - timedelta(days=1)
    Automation.objects.filter(pk=automation.pk).update(run_at=passed)  # it ran: its time is behind us now
    signed_in(client, alice, password)
    form = client.get(reverse("automation-edit", args=[automation.pk])).content.decode()
    shown = re.search(r'name="run_at" value="([^"]+)"', form).group(1)
    data = {**FORM, "cron": "", "timezone": "UTC", "name": "Digest renamed", "run_at": shown}
    response = client.post(reverse("automation-edit", args=[automation.pk]), data)
    automation.refresh_from_db()
    assert response.status_code == 302 and automation.name == "Digest renamed"
    assert automation.run_at == passed  # as it was, seconds included: not sent again


@pytest.mark.django_db
def test_a_webhooks_secret_is_shown_once_with_a_signed_curl_call(client, alice, password):
    signed_in(client, alice, password)
    response = client.post(reverse("automation-new"), {**FORM, "webhook": "on"})
    automation = Automation.objects.get(owner=alice)
    html = client.get(response["Location"]).content.decode()
    secret = webhook_secret(automation)
    assert f'<code id="webhook-secret-value">{secret}</code>' in html
    assert reverse("api-automation-trigger", args=[automation.pk]) in html and "openssl dgst -sha256 -hmac" in html
    again = client.get(response["Location"]).content.decode()
    assert secret not in again and reverse("api-automation-trigger", args=[automation.pk]) in again  # the URL stays


@pytest.mark.django_db
def test_run_now_starts_a_manual_run_as_a_turn_and_a_second_one_is_skipped(client, alice, team_a, password):
    automation = make(alice, team_a, name="Digest")
    signed_in(client, alice, password)
    runner = RecordingRunner()
    with use_runner(runner):
        response = client.post(reverse("automation-run-now", args=[automation.pk]))
    assert response.status_code == 302
    [run] = AutomationRun.objects.filter(automation=automation)
    assert run.trigger == "manual" and run.status == "running" and run.turn is not None
    assert runner.started == [run.turn_id] and run.turn.session.user == alice
    assert run.turn.user_message.startswith("Summarise the week of 20")
    html = client.get(response["Location"]).content.decode()
    assert f'id="run-{run.pk}"' in html and reverse("session-detail", args=[run.session_id]) in html

    with use_runner(runner):
        response = client.post(reverse("automation-run-now", args=[automation.pk]), follow=True)
    assert RUN_SKIPPED in response.content.decode() and len(runner.started) == 1
    assert AutomationRun.objects.filter(automation=automation, status="skipped").count() == 1


@pytest.mark.django_db
def test_a_notice_is_dismissed_only_by_its_reader(client, alice, bob, team_a, password):
    automation = make(alice, team_a, name="Digest")
    run = run_claim(automation, trigger="manual")
    item = notice(run, "Digest: the run failed. The model was unreachable.")
    signed_in(client, bob, password)
    assert client.post(reverse("inbox-dismiss", args=[item.pk])).status_code == 404
    signed_in(client, alice, password)
    html = client.get(reverse("inbox")).content.decode()
    assert "the run failed. The model was unreachable." in html and "Dismiss" in html
    assert re.search(r'id="badge-inbox" class="badge" data-count="1">1</span>', html)  # the header's bell
    assert client.post(reverse("inbox-dismiss", args=[item.pk])).status_code == 302
    item.refresh_from_db()
    assert item.resolved_at is not None
    assert "Nothing waits for you." in client.get(reverse("inbox")).content.decode()
    assert client.post(reverse("inbox-dismiss", args=[item.pk])).status_code == 404


@pytest.mark.django_db
def test_the_bell_answers_the_count_and_nothing_to_a_stranger(client, alice, team_a, password):
    automation = make(alice, team_a, name="Digest")
    run = run_claim(automation, trigger="manual")
    notice(run, "One")
    notice(run, "Two")
    response = client.get(reverse("inbox-bell"))
    assert response.status_code == 401 and response["HX-Reswap"] == "none"
    signed_in(client, alice, password)
    html = client.get(reverse("inbox-bell")).content.decode()
    assert re.search(r'<span id="badge-inbox" class="badge" data-count="2">2</span>', html)
    page = client.get(reverse("automations")).content.decode()
    assert f'hx-get="{reverse("inbox-bell")}" hx-trigger="every 30s"' in page and 'data-count="2">2<' in page


@pytest.mark.django_db
def test_notify_me_in_this_browser_is_the_notify_inbox_preference(client, alice, password):
    signed_in(client, alice, password)
    assert 'data-notify-inbox="1"' not in client.get(reverse("inbox")).content.decode()
    client.post(reverse("inbox-notify"), {"notify_inbox": "on"})
    assert preferences_get(user=alice).notify_inbox
    html = client.get(reverse("inbox")).content.decode()
    assert 'data-notify-inbox="1"' in html and 'id="id_notify_inbox" checked' in html
    client.post(reverse("inbox-notify"), {})
    assert not preferences_get(user=alice).notify_inbox


# --- approvals from the inbox (a real run on the scripted model) -----------------------------------


async def paused_run(make_automation, model, runner, **data) -> tuple[AutomationRun, Turn]:
    automation = await make_automation(execution="agent", **data)
    run = await sync_to_async(run_claim)(automation, trigger="manual")
    model.reply("", tool_calls=[("notes__add_note", {"text": "Call the supplier"})])
    turn = await sync_to_async(run_begin)(run)
    runner.start(turn.id)
    turn = await runner.wait(turn.id)
    assert turn.status == "awaiting_approval"
    return run, turn


async def client_of(user, password) -> ServerLikeAsyncClient:
    client = ServerLikeAsyncClient()
    await sync_to_async(client.login)(username=user.username, password=password)
    return client


@async_db
async def test_approve_in_the_inbox_resumes_the_run(make_automation, model, llm, alice, notes_tool, password):
    runner = LocalRunner()
    with use_runner(runner):
        run, turn = await paused_run(make_automation, model, runner)
        client = await client_of(alice, password)
        html = (await client.get(reverse("inbox"))).content.decode()
        item = await InboxItem.objects.aget(user=alice)
        assert f'id="inbox-item-{item.pk}"' in html and "Weekly summary" in html
        assert (
            "<code>notes__add_note</code>" in html
            and escape(json.dumps({"text": "Call the supplier"}, indent=2)) in html
        )
        assert reverse("session-detail", args=[turn.session_id]) in html
        assert 'data-count="1">1</span>' in html

        model.reply("Added the note.")
        response = await client.post(reverse("inbox-decide", args=[item.pk]), {"decision": "approve"})
        assert response.status_code == 302 and response["Location"] == reverse("inbox")
        turn = await runner.wait(turn.id)
    assert turn.status == "completed" and turn.answer == "Added the note."
    assert notes_tool.calls == ['{"text": "Call the supplier"}']
    approval = await ToolApproval.objects.aget(turn=turn)
    assert approval.decision == "approved" and approval.decided_by_id == alice.pk
    assert (await AutomationRun.objects.aget(pk=run.pk)).status == "completed"
    assert "Nothing waits for you." in (await client.get(reverse("inbox"))).content.decode()
    again = await client.post(reverse("inbox-decide", args=[item.pk]), {"decision": "approve"})
    assert again.status_code == 404  # answered: no longer in the inbox


@async_db
async def test_the_delegate_decides_and_a_stranger_cannot(
    make_automation, model, llm, alice, bob, carol, notes_tool, password
):
    runner = LocalRunner()
    with use_runner(runner):
        _, turn = await paused_run(make_automation, model, runner, delegate="bob")
        item = await InboxItem.objects.aget(user=bob)
        stranger = await client_of(carol, password)
        refused = await stranger.post(reverse("inbox-decide", args=[item.pk]), {"decision": "approve"})
        assert refused.status_code == 404
        client = await client_of(bob, password)
        html = (await client.get(reverse("inbox"))).content.decode()
        assert "<code>notes__add_note</code>" in html and "of alice, who made you its delegate" in html
        assert reverse("automation-detail", args=[item.automation_id]) not in html  # alice's page: a 404 to bob
        assert (await client.post(reverse("inbox-decide", args=[item.pk]), {"decision": "maybe"})).status_code == 400

        model.reply("I did not add the note.")
        response = await client.post(reverse("inbox-decide", args=[item.pk]), {"decision": "deny"})
        assert response.status_code == 302
        turn = await runner.wait(turn.id)
    assert turn.status == "completed" and notes_tool.calls == []
    approval = await ToolApproval.objects.aget(turn=turn)
    assert approval.decision == "denied" and approval.decided_by_id == bob.pk
    assert not await InboxItem.objects.filter(resolved_at__isnull=True).aexists()  # alice's item too
