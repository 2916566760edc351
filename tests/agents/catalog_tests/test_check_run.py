"""A check run (agents/catalog_tests): each check of every active mode runs its prompt as the first turn
of a new, hidden session in its mode and execution, and passes when every `expect` holds. With a
scripted model whose behaviour is known, each result and each reason it fails for are exactly what the
script implies; what the turn waits for is answered for that run alone (a tool approval approved
once, never granted for the session; a mode change refused); nothing is left behind."""

from __future__ import annotations

import pytest
from asgiref.sync import sync_to_async
from django.test import override_settings

from agents.catalog_tests import CheckCase, check_cases, checks_run
from agents.catalog_tests import checks as checks_module
from agents.models import AgentSession, ToolApproval, Turn
from agents.run.runners import LocalRunner
from agents.runner import use_runner
from modes.models import AgentMode, ModeHistory
from modes.seed import SEED_TESTS_AND_CHECKS
from tests.helpers import inline_db
from usage.models import UsageDay

pytestmark = inline_db

DDR = "ddr-authoring"


def write(title: str = "DDR: Caching") -> tuple[str, dict]:
    return ("document_write", {"title": title, "content": "## Purpose\nFaster pages."})


async def run(team, user, *cases: CheckCase, **kwargs):
    with use_runner(LocalRunner()):
        return await checks_run(user=user, team=team, cases=list(cases), limit=1, **kwargs)


async def nothing_left_behind() -> None:
    """Every check's session is deleted, no turn is open, no approval waits, no grant was given."""
    sessions = [s async for s in AgentSession.objects.filter(catalog_test=True)]
    assert sessions and all(s.deleted_at is not None for s in sessions)
    assert all(s.approval_grants == [] for s in sessions)
    assert not await Turn.objects.filter(finished_at__isnull=True).aexists()
    assert not await ToolApproval.objects.filter(decision="").aexists()


async def test_the_cases_are_every_active_modes_checks_in_catalog_order_with_their_defaults(team_a):
    await AgentMode.objects.all().aupdate(checks=[])
    await AgentMode.objects.filter(key="general").aupdate(checks=[{"prompt": "Hi", "expect": {"contains": "hello"}}])
    await AgentMode.objects.filter(key=DDR).aupdate(
        checks=[
            {"prompt": "Draft a DDR", "execution": "agent", "expect": {"tool": "document_write", "status": "failed"}}
        ]
    )
    await AgentMode.objects.filter(key="data-analysis").aupdate(
        checks=[{"prompt": "Revenue?", "execution": "ask", "expect": {"tool": "sql__query"}}], is_active=False
    )
    cases = await sync_to_async(check_cases)(team=team_a)
    assert cases == [
        CheckCase("general", "Hi", "ask", {"contains": "hello", "status": "completed"}),
        CheckCase(DDR, "Draft a DDR", "agent", {"tool": "document_write", "status": "failed"}),
    ]


async def test_a_check_whose_expectations_hold_passes(team_a, alice, model, llm):
    model.reply("", tool_calls=[("agent_list_modes", {})])
    model.reply("There are General and Data Analysis.")
    expect = {"tool": "agent_list_modes", "contains": "data analysis"}  # case-insensitive
    case = CheckCase("general", "What modes are there?", "ask", expect)
    result = await run(team_a, alice, case)
    [check] = result.checks
    assert (check.mode, check.prompt, check.execution) == ("general", "What modes are there?", "ask")
    assert (check.ok, check.failed, check.status, check.approved) == (True, [], "completed", [])
    assert check.tokens > 0 and check.seconds >= 0
    assert (result.passed, result.failed) == (1, 0)
    assert check.as_dict()["failed"] == [] and result.as_dict()["checks"][0]["ok"] is True
    session = await AgentSession.objects.aget(catalog_test=True)
    assert (session.mode, session.execution) == ("general", "ask")
    await nothing_left_behind()


async def test_a_check_fails_on_each_expectation_with_its_reason(team_a, alice, model, llm):
    model.reply("Sorry, I can only chat.")
    case = CheckCase(
        DDR,
        "Draft a DDR for caching",
        "agent",
        {"tool": "document_write", "contains": "DDR: Caching", "not_contains": "SORRY", "status": "completed"},
    )
    result = await run(team_a, alice, case)
    [check] = result.checks
    assert check.ok is False
    assert check.failed == [
        "tool document_write was not called",
        "answer does not contain 'DDR: Caching'",
        "answer contains 'SORRY'",
    ]
    assert (result.passed, result.failed) == (0, 1)
    assert (await AgentSession.objects.aget(catalog_test=True)).execution == "agent"


async def test_a_failed_turn_fails_a_check_expecting_completed_and_passes_one_expecting_failed(
    team_a, alice, model, llm
):
    model.error(400)  # not retried: the turn fails at once
    model.error(400)
    completed = CheckCase("general", "Hello", "ask", {"contains": "hello"})  # status: completed by default
    failed = CheckCase("general", "Hello", "ask", {"status": "failed"})
    result = await run(team_a, alice, completed, failed)
    assert [(c.ok, c.status, c.failed) for c in result.checks] == [
        (False, "failed", ["answer does not contain 'hello'", "status is failed, expected completed"]),
        (True, "failed", []),
    ]
    assert (result.passed, result.failed) == (1, 1)
    await nothing_left_behind()


async def test_a_tool_that_needs_approval_is_approved_once_for_that_run_and_listed(team_a, alice, model, llm):
    await AgentMode.objects.filter(key=DDR).aupdate(approval_policy=["document_write: ask"])
    model.reply("", tool_calls=[write()])
    model.reply("DDR: Caching is drafted.")
    case = CheckCase(DDR, "Draft a DDR for caching", "agent", {"tool": "document_write", "contains": "drafted"})
    result = await run(team_a, alice, case)
    [check] = result.checks
    assert (check.ok, check.failed, check.status) == (True, [], "completed")
    assert check.approved == ["document_write"] and check.declined == []
    assert model.calls == 2  # paused for the approval, then resumed with the tool's result

    turn = await Turn.objects.select_related("session").aget(session__catalog_test=True)
    [approval] = [a async for a in ToolApproval.objects.filter(turn=turn)]
    assert (approval.kind, approval.tool, approval.decision, approval.scope) == (
        ToolApproval.Kind.TOOL,
        "document_write",
        ToolApproval.Decision.APPROVED,
        ToolApproval.Scope.ONCE,
    )
    assert approval.decided_by_id == alice.pk  # the curator's decision, as a user's card would record it
    assert turn.session.approval_grants == []  # for that turn only: no "allow for this session"
    await nothing_left_behind()


async def test_a_mode_change_is_refused_and_listed_and_the_session_stays_in_the_checks_mode(team_a, alice, model, llm):
    switch = ("agent_change_mode", {"mode": "data-analysis", "branch": True, "reason": "Numbers."})
    model.reply("", tool_calls=[switch])
    case = CheckCase(DDR, "Chart revenue", "ask", {"tool": "agent_change_mode", "not_contains": "Data Analysis"})
    result = await run(team_a, alice, case)
    [check] = result.checks
    assert (check.ok, check.status, check.approved, check.declined) == (True, "completed", [], ["agent_change_mode"])
    assert model.calls == 1  # a refused change ends the turn, as a user's "stay" does
    session = await AgentSession.objects.aget(catalog_test=True)
    assert session.mode == DDR and await ModeHistory.objects.acount() == 0
    assert await AgentSession.objects.acount() == 1  # no branch was made
    [approval] = [a async for a in ToolApproval.objects.filter(session=session)]
    assert (approval.kind, approval.decision) == (ToolApproval.Kind.MODE_CHANGE, ToolApproval.Decision.DENIED)
    assert "denied" in (await Turn.objects.aget(session=session)).answer
    await nothing_left_behind()


async def test_a_model_that_keeps_asking_stops_after_the_bounded_rounds(team_a, alice, model, llm, monkeypatch):
    monkeypatch.setattr(checks_module, "MAX_APPROVAL_ROUNDS", 2)
    await AgentMode.objects.filter(key=DDR).aupdate(approval_policy=["document_write: ask"])
    for n in range(3):
        model.reply("", tool_calls=[write(f"DDR: Draft {n}")])
    model.reply("Never reached.")
    result = await run(team_a, alice, CheckCase(DDR, "Draft", "agent", {"tool": "document_write"}))
    [check] = result.checks
    assert check.approved == ["document_write", "document_write"]
    assert check.status == "awaiting_approval"
    assert check.failed == [
        "status is awaiting_approval, expected completed",
        "still waiting for approvals after 2 rounds",
    ]
    assert model.calls == 3
    turn = await Turn.objects.aget(session__catalog_test=True)
    assert turn.status == "cancelled"  # what still waited is closed
    await nothing_left_behind()


async def test_a_check_expecting_the_pause_stops_at_it_and_approves_nothing(team_a, alice, model, llm):
    await AgentMode.objects.filter(key=DDR).aupdate(approval_policy=["document_write: ask"])
    model.reply("", tool_calls=[write()])
    case = CheckCase(DDR, "Draft", "agent", {"tool": "document_write", "status": "awaiting_approval"})
    result = await run(team_a, alice, case)
    [check] = result.checks
    assert (check.ok, check.status, check.approved) == (True, "awaiting_approval", [])
    [approval] = [a async for a in ToolApproval.objects.all()]
    assert approval.decision == ToolApproval.Decision.CANCELLED and approval.decided_by_id is None
    assert model.calls == 1
    await nothing_left_behind()


async def test_results_keep_the_cases_order_and_tokens_are_the_curators(team_a, alice, model, llm):
    for text in ("one", "two", "three"):
        model.reply(f"Answer {text}.", chunk_delay=0.01)
    cases = [CheckCase("general", f"Say {text}", "ask", {"contains": text}) for text in ("one", "two", "three")]
    with override_settings(APTIX_CATALOG_TEST_CONCURRENCY=2), use_runner(LocalRunner()):
        result = await checks_run(user=alice, team=team_a, cases=cases)
    assert [c.prompt for c in result.checks] == ["Say one", "Say two", "Say three"]
    assert result.passed == 3 and result.seconds >= 0
    tokens = sum(c.tokens for c in result.checks)
    counted = [u.prompt_tokens + u.completion_tokens async for u in UsageDay.objects.filter(user=alice)]
    assert tokens > 0 and sum(counted) == tokens


async def test_runs_go_at_most_the_configured_checks_at_once(team_a, alice, model, llm, monkeypatch):
    for _ in range(4):
        model.reply("Sure.", chunk_delay=0.02)
    running, most = 0, 0
    real = checks_module.check_case_run

    async def counted(**kwargs):
        nonlocal running, most
        running += 1
        most = max(most, running)
        try:
            return await real(**kwargs)
        finally:
            running -= 1

    monkeypatch.setattr(checks_module, "check_case_run", counted)
    cases = [CheckCase("general", f"Case {n}", "ask", {"contains": "sure"}) for n in range(4)]
    with override_settings(APTIX_CATALOG_TEST_CONCURRENCY=2), use_runner(LocalRunner()):
        result = await checks_run(user=alice, team=team_a, cases=cases)
    assert result.passed == 4 and most == 2


SEED_CHECKS = sum(len(cases["checks"]) for cases in SEED_TESTS_AND_CHECKS.values())


@pytest.mark.usefixtures("mcp_sql_tool")  # the data-analysis check queries the demo database's server
async def test_the_seed_catalogs_checks_all_pass_with_the_offline_model(team_a, alice):
    with use_runner(LocalRunner()):
        result = await checks_run(user=alice, team=team_a)
    assert len(result.checks) == SEED_CHECKS
    assert [(c.mode, c.prompt, c.failed) for c in result.checks if not c.ok] == []
    assert (result.passed, result.failed) == (SEED_CHECKS, 0)
    await nothing_left_behind()
