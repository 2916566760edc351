"""An automation's run: claimed once per scheduled time, begun as a turn of its owner, followed to its
end; a tool call it needs approval for waits in the owner's inbox (and e-mail), a pre-approved one runs."""

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
from automations.inbox import inbox_open
from automations.models import AutomationRun, InboxItem
from automations.runs import run_begin, run_claim, run_follow
from automations.scheduler import claim_due, tick
from tests.helpers import inline_db

pytestmark = inline_db


async def begin_and_wait(runner: LocalRunner, run: AutomationRun) -> Turn:
    turn = await sync_to_async(run_begin)(run)
    assert turn is not None
    return await runner.wait(runner.start(turn.id) and turn.id)


async def test_a_scheduled_time_is_claimed_once_and_runs_as_its_owner(make_automation, model, llm, alice):
    automation = await make_automation(schedule={"cron": "0 8 * * 1", "timezone": "Europe/Paris"})
    due = automation.next_run_at
    assert due is not None and due.astimezone(timezone.get_default_timezone()).weekday() in (0, 6)
    claimed = await sync_to_async(claim_due)(due + timedelta(seconds=1))
    again = await sync_to_async(claim_due)(due + timedelta(seconds=2))  # a second process looking
    assert [run.scheduled_for for run in claimed] == [due] and again == []
    duplicate = await sync_to_async(run_claim)(automation, trigger="schedule", scheduled_for=due)
    assert duplicate is None  # the unique claim: the row exists

    model.reply("Here is the summary.")
    runner = LocalRunner()
    with use_runner(runner):
        turn = await begin_and_wait(runner, claimed[0])
    assert turn.status == "completed" and turn.session.user_id == alice.pk
    assert turn.user_message.startswith("Summarise the week of 20")
    run = await AutomationRun.objects.select_related("automation").aget(pk=claimed[0].pk)
    assert run.status == "completed" and run.turn_id == turn.pk and run.session_id == turn.session_id
    assert run.ended_at is not None and run.tokens > 0


async def test_a_call_that_needs_approval_waits_in_the_inbox_then_resumes(
    make_automation, model, llm, alice, notes_tool, settings
):
    alice.email = "alice@example.com"
    await alice.asave()
    automation = await make_automation(execution="agent")
    run = await sync_to_async(run_claim)(automation, trigger="manual")
    model.reply("", tool_calls=[("notes__add_note", {"text": "Call the supplier"})])
    runner = LocalRunner()
    with use_runner(runner):
        turn = await begin_and_wait(runner, run)
        assert turn.status == "awaiting_approval"
        items = await sync_to_async(lambda: list(inbox_open(user=alice)))()
        assert [item.kind for item in items] == ["approval"] and "notes__add_note" in items[0].text
        assert len(mail.outbox) == 1 and "notes__add_note" in mail.outbox[0].body and "/inbox/" in mail.outbox[0].body
        assert (await AutomationRun.objects.aget(pk=run.pk)).status == "awaiting_approval"

        approval = await ToolApproval.objects.aget(turn=turn)
        model.reply("Added the note.")
        decided = partial_decide(turn, approval.tool_call_id, alice)
        submitted = await turn_submit(decided)
        turn = await runner.wait(submitted.turn.id, submitted.started)
    assert turn.status == "completed" and notes_tool.calls == ['{"text": "Call the supplier"}']
    assert (await AutomationRun.objects.aget(pk=run.pk)).status == "completed"
    assert not await InboxItem.objects.filter(user=alice, resolved_at__isnull=True).aexists()


def partial_decide(turn, call_id, user):
    def record():
        return turn if approval_decide(turn=turn, decisions=[UserDecision(call_id, True)], user=user) else None

    return record


async def test_a_pre_approved_tool_runs_without_asking(make_automation, model, llm, notes_tool):
    automation = await make_automation(execution="agent", allowedTools=["notes__add_note"])
    run = await sync_to_async(run_claim)(automation, trigger="manual")
    model.reply("", tool_calls=[("notes__add_note", {"text": "x"})])
    model.reply("Done.")
    runner = LocalRunner()
    with use_runner(runner):
        turn = await begin_and_wait(runner, run)
    assert turn.status == "completed" and len(notes_tool.calls) == 1
    assert not await ToolApproval.objects.filter(turn=turn).aexists()


async def test_an_unanswered_approval_expires(make_automation, model, llm, alice, notes_tool):
    automation = await make_automation(execution="agent", approvalTimeoutHours=1)
    run = await sync_to_async(run_claim)(automation, trigger="manual")
    model.reply("", tool_calls=[("notes__add_note", {"text": "x"})])
    runner = LocalRunner()
    with use_runner(runner):
        turn = await begin_and_wait(runner, run)
    assert turn.status == "awaiting_approval"
    run = await AutomationRun.objects.select_related("automation", "automation__owner").aget(pk=run.pk)
    await sync_to_async(run_follow)(run, now=timezone.now() + timedelta(hours=2))
    run = await AutomationRun.objects.aget(pk=run.pk)
    assert run.status == "expired" and "within 1 h" in run.error
    assert (await Turn.objects.aget(pk=turn.pk)).status == "cancelled"
    texts = [item.text async for item in InboxItem.objects.filter(user=alice, resolved_at__isnull=True)]
    assert len(texts) == 1 and "within 1 h" in texts[0]
    assert notes_tool.calls == []


async def test_tick_begins_and_dispatches_a_due_run(make_automation, model, llm):
    automation = await make_automation(schedule={"cron": "* * * * *", "timezone": "UTC"})
    model.reply("Tick answer.")
    runner = LocalRunner()
    with use_runner(runner):
        turn_ids = await tick(automation.next_run_at + timedelta(seconds=5))
        assert len(turn_ids) == 1
        turn = await runner.wait(turn_ids[0])
    assert turn.status == "completed" and turn.answer == "Tick answer."
