"""Catalog test runs as records: started by a curator, run in the background with their progress
written as cases end, stopped on request (the cases under way cancelled, nothing left behind), their
results kept with the catalog versions they ran over, and yielding to people's turns."""

from __future__ import annotations

import pytest
from asgiref.sync import sync_to_async
from django.core.exceptions import PermissionDenied, ValidationError
from django.test import override_settings

from agents.catalog_tests import STAY, execute
from agents.catalog_tests.execute import test_run_execute as run_execute
from agents.catalog_tests.execute import test_run_launch as run_launch
from agents.catalog_tests.execute import test_runs_wait as runs_wait
from agents.catalog_tests.runs import test_run_create as run_create
from agents.catalog_tests.runs import test_run_delete as run_delete
from agents.catalog_tests.runs import test_run_json as run_json
from agents.catalog_tests.runs import test_run_stop as run_stop
from agents.models import AgentSession, CatalogTestRun, Turn
from agents.run.runners import LocalRunner
from agents.runner import use_runner
from agents.sessions import session_create
from agents.turns import turn_start
from aptix.models import Membership
from modes.models import AgentMode
from modes.proposal import proposal_text
from tests.helpers import inline_db
from usage.services import Charge, usage_charge

pytestmark = inline_db

CATALOG = {
    "general": ["Hello there"],
    "data-analysis": ["Chart revenue by month", "Sum the sales per region"],
    "ddr-authoring": [],
    "workflow-authoring": [],
}


@pytest.fixture
def member_curator(curator, team_a):
    Membership.objects.create(team=team_a, user=curator, role=Membership.Role.MEMBER)
    for key, utterances in CATALOG.items():
        AgentMode.objects.filter(key=key).update(example_utterances=utterances, test_utterances=[])
    return curator


async def test_a_run_records_its_cases_summary_progress_and_the_versions_it_ran_over(member_curator, model, llm):
    model.reply("Hi!")  # Hello there → stay (right)
    model.reply(proposal_text("Data Analysis", "data-analysis"))  # Chart → data-analysis (right)
    model.reply("Here is the sum.")  # Sum → stay (wrong)
    run = await sync_to_async(run_create)(user=member_curator, catalog="published", kind="routing")
    assert (run.status, run.versions["published"]["data-analysis"]) == ("queued", 1)
    with override_settings(APTIX_CATALOG_TEST_CONCURRENCY=1), use_runner(LocalRunner()):
        await run_execute(run.pk)
    await run.arefresh_from_db()
    assert (run.status, run.done, run.total, run.accuracy) == ("done", 3, 3, pytest.approx(2 / 3, abs=1e-4))
    assert run.started_at and run.finished_at and run.tokens > 0
    body = await sync_to_async(run_json)(await CatalogTestRun.objects.select_related("started_by").aget(pk=run.pk))
    assert [(c["utterance"], c["expected"], c["got"], c["ok"]) for c in body["cases"]] == [
        ("Hello there", STAY, STAY, True),
        ("Chart revenue by month", "data-analysis", "data-analysis", True),
        ("Sum the sales per region", "data-analysis", STAY, False),
    ]
    assert body["modes"] == {
        STAY: {"precision": 0.5, "recall": 1.0},
        "data-analysis": {"precision": 1.0, "recall": 0.5},
    }
    assert body["matrix"] == {"data-analysis": {"data-analysis": 1, STAY: 1}, STAY: {STAY: 1}}
    assert (body["status"], body["progress"], body["checks"]) == ("done", {"done": 3, "total": 3}, [])
    # Its sessions are the run's, and deleted: nobody sees them.
    sessions = [s async for s in AgentSession.objects.filter(catalog_run_id=run.pk)]
    assert len(sessions) == 3 and all(s.deleted_at and s.catalog_test for s in sessions)


async def test_only_curators_start_see_or_stop_runs_and_bad_fields_are_named(alice, member_curator):
    with pytest.raises(PermissionDenied):
        await sync_to_async(run_create)(user=alice)
    for field, value in (("catalog", "everything"), ("kind", "all"), ("model", "no-such-model")):
        with pytest.raises(ValidationError) as raised:
            await sync_to_async(run_create)(user=member_curator, **{field: value})
        assert field in raised.value.message_dict
    run = await sync_to_async(run_create)(user=member_curator)
    with pytest.raises(PermissionDenied):
        await sync_to_async(run_stop)(user=alice, run=run)


async def test_a_stop_cancels_the_case_under_way_and_keeps_what_finished(member_curator, model, llm):
    model.reply("Hi!")  # the first case ends
    model.reply("A" * 200, chunk_delay=0.5)  # the second is slow: 100 chunks, cut by the stop
    run = await sync_to_async(run_create)(user=member_curator)
    with override_settings(APTIX_CATALOG_TEST_CONCURRENCY=1), use_runner(LocalRunner()):
        task = run_launch(run.pk)
        while len(model.requests) < 2:  # the second case's model call has begun
            model.requested.clear()
            await model.requested.wait()
        await sync_to_async(run_stop)(user=member_curator, run=run)
        await task
    await run.arefresh_from_db()
    assert (run.status, run.done, run.total) == ("stopped", 1, 3)
    assert [c["utterance"] for c in run.results["published"]["routing"]["cases"]] == ["Hello there"]
    assert len(model.requests) == 2  # the third case never started
    assert not await Turn.objects.filter(finished_at__isnull=True).aexists()
    assert await Turn.objects.filter(session__catalog_run_id=run.pk, status="cancelled").acount() == 1
    assert not await AgentSession.objects.filter(catalog_run_id=run.pk, deleted_at__isnull=True).aexists()
    # A finished run is deleted with its results; its (deleted) sessions stay for the audit.
    await sync_to_async(run_delete)(user=member_curator, run=run)
    assert not await CatalogTestRun.objects.filter(pk=run.pk).aexists()
    assert await AgentSession.objects.filter(catalog_test=True).acount() == 2


async def test_a_queued_run_stopped_never_starts_and_a_running_one_cannot_be_deleted(member_curator, model, llm):
    run = await sync_to_async(run_create)(user=member_curator)
    stopped = await sync_to_async(run_stop)(user=member_curator, run=run)
    assert stopped.status == "stopped"
    with use_runner(LocalRunner()):
        await run_execute(run.pk)
    assert model.requests == []
    running = await sync_to_async(run_create)(user=member_curator)
    await CatalogTestRun.objects.filter(pk=running.pk).aupdate(status="running")
    await running.arefresh_from_db()
    with pytest.raises(ValidationError, match="stop it first"):
        await sync_to_async(run_delete)(user=member_curator, run=running)


async def test_a_run_past_the_curators_quota_fails_saying_why(member_curator, team_a, model, llm):
    """Its turns are the curator's: their usage, and their team's quota."""
    team_a.monthly_token_quota = 1000
    await team_a.asave()
    await sync_to_async(usage_charge)(Charge(team_a.pk, member_curator.pk, "m", "general", 1000, 0, None, True))
    run = await sync_to_async(run_create)(user=member_curator)
    with use_runner(LocalRunner()):
        await run_execute(run.pk)
    await run.arefresh_from_db()
    assert run.status == "failed" and "Team A has used its monthly quota of 1,000 tokens" in run.error
    assert model.requests == []


async def test_a_run_goes_one_case_at_a_time_while_a_persons_turn_is_live(member_curator, team_a, alice, model, llm):
    for _ in range(3):
        model.reply("Sure.", chunk_delay=0.02)
    person = await sync_to_async(session_create)(team=team_a, user=alice)
    await sync_to_async(turn_start)(session=person, text="Hi")  # queued: a person's turn is live
    most, running = 0, 0
    real = execute.routing_case_run

    async def counted(**kwargs):
        nonlocal running, most
        running += 1
        most = max(most, running)
        try:
            return await real(**kwargs)
        finally:
            running -= 1

    execute.routing_case_run = counted
    try:
        run = await sync_to_async(run_create)(user=member_curator)
        with override_settings(APTIX_CATALOG_TEST_CONCURRENCY=4), use_runner(LocalRunner()):
            run_launch(run.pk)
            await runs_wait()
    finally:
        execute.routing_case_run = real
    await run.arefresh_from_db()
    assert (run.status, run.done) == ("done", 3)
    assert most == 1


async def test_a_queued_run_is_taken_by_the_process_that_looks_once_only(member_curator, model, llm):
    """A run a sync view left queued (or whose process stopped before it began) is started by the
    serving process's taker; two looks (or two processes) start it once."""
    model.reply("Hi!")
    model.reply("Sure.")
    model.reply("Sure.")
    run = await sync_to_async(run_create)(user=member_curator)
    with use_runner(LocalRunner()):
        assert await execute.test_runs_take() == 1
        assert await execute.test_runs_take() in (0, 1)  # claimed already, or not yet: started once either way
        await runs_wait()
    await run.arefresh_from_db()
    assert (run.status, run.done) == ("done", 3) and len(model.requests) == 3


async def test_a_compare_run_of_routing_and_checks_lists_what_the_drafts_change(member_curator, model, llm):
    """Over the published catalog, then with the drafts: routing cases, then checks, each way; the
    record keeps both, the drafts' as its answer, and what changed: cases and broken checks."""
    from modes.versions import draft_save

    check = {"prompt": "Say hello", "execution": "ask", "expect": {"contains": "hello"}}
    await AgentMode.objects.filter(key="general").aupdate(checks=[check])
    await AgentMode.objects.exclude(key="general").aupdate(checks=[])
    draft = await sync_to_async(draft_save)(mode="general", fields={"description": "Anything."}, author=None)
    for reply in ("Hi!", proposal_text("Data Analysis", "data-analysis"), "Sure."):  # published routing
        model.reply(reply)
    model.reply("Hello to you!")  # the published check passes
    for reply in ("Hi!", "Sure.", "Sure."):  # with the drafts, "Chart revenue by month" now stays
        model.reply(reply)
    model.reply("Good morning.")  # the check fails with the drafts
    run = await sync_to_async(run_create)(user=member_curator, catalog="compare", kind="both")
    assert run.versions["drafts"] == {"general": draft.number}
    with override_settings(APTIX_CATALOG_TEST_CONCURRENCY=1), use_runner(LocalRunner()):
        await run_execute(run.pk)
    run = await CatalogTestRun.objects.select_related("started_by").aget(pk=run.pk)
    assert (run.status, run.done, run.total, run.checks_failed) == ("done", 8, 8, 1)
    body = await sync_to_async(run_json)(run)
    assert (body["published"]["accuracy"], body["accuracy"]) == (
        pytest.approx(0.6667, abs=1e-4),
        pytest.approx(0.3333, abs=1e-4),
    )
    assert [(c["mode"], c["ok"]) for c in body["published"]["checks"]] == [("general", True)]
    assert [(c["mode"], c["ok"], c["failed"]) for c in body["checks"]] == [
        ("general", False, ["answer does not contain 'hello'"])
    ]
    assert [(c["utterance"], c["got_before"], c["got_after"]) for c in body["changed"]["cases"]] == [
        ("Chart revenue by month", "data-analysis", STAY)
    ]
    assert [(c["mode"], c["prompt"]) for c in body["changed"]["checks"]] == [("general", "Say hello")]


async def test_a_run_whose_process_died_is_ended_as_failed_by_the_next_look(member_curator):
    from datetime import timedelta

    from django.utils import timezone

    run = await sync_to_async(run_create)(user=member_curator)
    silent = timezone.now() - timedelta(seconds=31)
    await CatalogTestRun.objects.filter(pk=run.pk).aupdate(status="running", started_at=silent, heartbeat_at=silent)
    assert await execute.test_runs_take() == 0
    await run.arefresh_from_db()
    assert (
        run.status == "failed"
        and run.error == "The process running this test stopped before it finished (a restart or a crash)."
    )
    assert run.finished_at is not None
