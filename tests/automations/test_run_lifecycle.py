"""What happens around a run: overlapping times (skip or queue), times missed while nothing ran
(caught up once, or skipped), failures (retried with backoff, then reported; three in a row pause the
automation), the quota's refusal, a denied approval, and an owner who leaves the team."""

from __future__ import annotations

from datetime import timedelta

from asgiref.sync import sync_to_async
from django.core import mail
from django.utils import timezone

from agents.approvals import UserDecision, approval_decide
from agents.models import ToolApproval, Turn
from agents.run.runners import LocalRunner
from agents.runner import use_runner
from agents.submit import turn_submit
from aptix.models import Membership
from automations.models import Automation, AutomationAudit, AutomationRun, InboxItem
from automations.runs import ERROR_MISSED, ERROR_SKIPPED_OVERLAP, run_begin, run_claim, runs_waiting_to_begin
from automations.scheduler import claim_due, tick
from tests.helpers import inline_db

pytestmark = inline_db


async def run_to_end(runner: LocalRunner, run: AutomationRun) -> Turn:
    turn = await sync_to_async(run_begin)(run)
    assert turn is not None
    runner.start(turn.id)
    return await runner.wait(turn.id)


async def fresh(run: AutomationRun) -> AutomationRun:
    return await AutomationRun.objects.select_related("automation").aget(pk=run.pk)


async def test_overlap_skip_records_the_time_as_skipped(make_automation, model, llm, notes_tool):
    automation = await make_automation(execution="agent", overlap="skip")
    first = await sync_to_async(run_claim)(automation, trigger="manual")
    model.reply("", tool_calls=[("notes__add_note", {"text": "x"})])
    with use_runner(runner := LocalRunner()):
        assert (await run_to_end(runner, first)).status == "awaiting_approval"  # still going
    second = await sync_to_async(run_claim)(automation, trigger="manual")
    assert second.status == "skipped" and second.error == ERROR_SKIPPED_OVERLAP and second.ended_at


async def test_overlap_queue_begins_the_next_run_once_the_first_ends(make_automation, model, llm, alice, notes_tool):
    automation = await make_automation(execution="agent", overlap="queue")
    first = await sync_to_async(run_claim)(automation, trigger="manual")
    model.reply("", tool_calls=[("notes__add_note", {"text": "x"})])
    runner = LocalRunner()
    with use_runner(runner):
        turn = await run_to_end(runner, first)
        second = await sync_to_async(run_claim)(automation, trigger="manual")
        assert second.status == "queued"
        assert await sync_to_async(run_begin)(second) is None  # waits for the first
        assert await sync_to_async(runs_waiting_to_begin)() == []

        approval = await ToolApproval.objects.aget(turn=turn)
        model.reply("First done.")
        model.reply("Second done.")
        decided = partial_decide(turn, approval.tool_call_id, alice, approve=True)
        submitted = await turn_submit(decided)
        await runner.wait(submitted.turn.id, submitted.started)
        assert (await fresh(first)).status == "completed"
        [turn_id] = await tick()
        second_turn = await runner.wait(turn_id)
    assert second_turn.answer == "Second done." and (await fresh(second)).status == "completed"


def partial_decide(turn, call_id, user, *, approve):
    def record():
        return turn if approval_decide(turn=turn, decisions=[UserDecision(call_id, approve)], user=user) else None

    return record


async def test_a_time_missed_while_nothing_ran_runs_once_with_catch_up(make_automation):
    automation = await make_automation(schedule={"cron": "0 * * * *", "timezone": "UTC"})
    later = automation.next_run_at + timedelta(hours=3, minutes=30)  # four times passed while everything was down
    [run] = await sync_to_async(claim_due)(later)
    assert run.scheduled_for == automation.next_run_at + timedelta(hours=3) and run.status == "queued"
    assert await sync_to_async(claim_due)(later + timedelta(seconds=1)) == []
    assert await AutomationRun.objects.filter(automation=automation).acount() == 1
    refreshed = await Automation.objects.aget(pk=automation.pk)
    assert refreshed.next_run_at == run.scheduled_for + timedelta(hours=1)


async def test_without_catch_up_a_missed_time_is_recorded_skipped(make_automation):
    automation = await make_automation(schedule={"cron": "0 * * * *", "timezone": "UTC"}, catchUp=False)
    assert await sync_to_async(claim_due)(automation.next_run_at + timedelta(hours=3, minutes=30)) == []
    run = await AutomationRun.objects.aget(automation=automation)
    assert (run.status, run.error) == ("skipped", ERROR_MISSED)


async def test_after_a_short_stop_the_time_due_now_runs_with_or_without_catch_up(make_automation):
    automation = await make_automation(schedule={"cron": "* * * * *", "timezone": "UTC"}, catchUp=False)
    later = automation.next_run_at + timedelta(hours=3, seconds=20)  # the last time is 20 s old: on time
    [run] = await sync_to_async(claim_due)(later)
    assert run.status == "queued" and later - run.scheduled_for == timedelta(seconds=20)


async def test_a_failed_run_is_retried_with_backoff_then_reported_and_three_in_a_row_pause(
    make_automation, model, llm, alice, settings
):
    settings.APTIX_AUTOMATION_RETRY_SECONDS = 30
    alice.email = "alice@example.com"
    await alice.asave()
    automation = await make_automation(maxRetries=1)
    runner = LocalRunner()
    for n in range(1, 4):
        run = await sync_to_async(run_claim)(automation, trigger="manual")
        model.error(400, "The model refused the request")
        with use_runner(runner):
            assert (await run_to_end(runner, run)).status == "failed"
        run = await fresh(run)
        assert run.status == "failed" and run.retry_at is not None
        assert timedelta(seconds=25) < run.retry_at - timezone.now() <= timedelta(seconds=30)
        model.error(400, "The model refused the request")
        with use_runner(runner):
            [turn_id] = await tick(run.retry_at + timedelta(seconds=1))
            await runner.wait(turn_id)
        retry = await AutomationRun.objects.aget(automation=automation, attempt=2, turn_id=turn_id)
        assert retry.status == "failed" and retry.retry_at is None  # no attempt left: reported
        notices = [i.text async for i in InboxItem.objects.filter(user=alice, kind="notice", run=retry)]
        assert any("failed after 2 attempts" in text for text in notices)
        assert (await Automation.objects.aget(pk=automation.pk)).failures_in_row == n
    automation = await Automation.objects.aget(pk=automation.pk)
    assert not automation.enabled and "Paused after 3 failed runs in a row" in automation.paused_reason
    assert await AutomationAudit.objects.filter(automation_id=automation.pk, action="stopped").aexists()
    subjects = [m.subject for m in mail.outbox]
    assert sum("the run failed after 2 attempts" in s for s in subjects) == 3
    assert sum("Paused after 3 failed runs" in s for s in subjects) == 1


async def test_the_quota_refuses_a_run_and_its_owner_is_told(make_automation, model, llm, alice, team_a):
    automation = await make_automation()
    model.reply("First answer.", prompt_tokens=50, completion_tokens=50)
    with use_runner(runner := LocalRunner()):
        await run_to_end(runner, await sync_to_async(run_claim)(automation, trigger="manual"))
    team_a.monthly_token_quota = 10
    await team_a.asave()
    refused = await sync_to_async(run_claim)(automation, trigger="manual")
    assert await sync_to_async(run_begin)(refused) is None
    refused = await fresh(refused)
    assert refused.status == "failed" and refused.error.startswith("Refused by the usage quota")
    assert refused.retry_at is None  # waiting does not help: no retry
    assert await InboxItem.objects.filter(user=alice, run=refused, kind="notice").aexists()


async def test_a_denied_call_tells_the_model_and_the_run_completes(make_automation, model, llm, alice, notes_tool):
    automation = await make_automation(execution="agent")
    run = await sync_to_async(run_claim)(automation, trigger="manual")
    model.reply("", tool_calls=[("notes__add_note", {"text": "x"})])
    runner = LocalRunner()
    with use_runner(runner):
        turn = await run_to_end(runner, run)
        approval = await ToolApproval.objects.aget(turn=turn)
        model.reply("Understood, no note.")
        submitted = await turn_submit(partial_decide(turn, approval.tool_call_id, alice, approve=False))
        turn = await runner.wait(submitted.turn.id, submitted.started)
    assert turn.status == "completed" and notes_tool.calls == []
    tool_message = next(m for m in model.requests[-1]["messages"] if m["role"] == "tool")
    assert "denied" in tool_message["content"]
    assert (await fresh(run)).status == "completed"


async def test_an_owner_who_leaves_the_team_stops_their_automations(make_automation, alice, team_a):
    automation = await make_automation(schedule={"cron": "0 8 * * *", "timezone": "UTC"})
    await Membership.objects.filter(user=alice, team=team_a).adelete()
    automation = await Automation.objects.aget(pk=automation.pk)
    assert not automation.enabled and "alice is no longer an active member" in automation.paused_reason
    assert await sync_to_async(claim_due)(automation.next_run_at + timedelta(seconds=1)) == []


async def test_a_deactivated_owners_run_does_not_start(make_automation, alice):
    automation = await make_automation()
    run = await sync_to_async(run_claim)(automation, trigger="manual")
    alice.is_active = False
    await alice.asave()
    assert await sync_to_async(run_begin)(run) is None
    run = await fresh(run)
    assert run.status == "cancelled" and "no longer an active member" in run.error
    assert not await Turn.objects.filter(session__user=alice).aexists()
