"""A routing run (agents/catalog_tests): each utterance of every active mode is the first message of
a new, hidden session in the default mode, Ask; the case's result is the mode the agent moved towards
(a proposal's, or an agent_change_mode call's, never made) or "stay". With a scripted model whose
choice is known, the cases, the confusion matrix, the accuracy and each mode's precision and recall are
exactly what the script implies; nothing a case did is left behind: no pending approval, no mode change,
no session anyone sees, and the tokens counted for the curator who ran it."""

from __future__ import annotations

from asgiref.sync import sync_to_async
from django.test import override_settings

from agents.catalog_tests import STAY, routing, routing_cases, routing_run, routing_summary
from agents.models import AgentSession, ToolApproval, Turn
from agents.run.runners import LocalRunner
from agents.runner import use_runner
from modes.models import AgentMode, ModeHistory
from modes.proposal import proposal_text
from tests.helpers import inline_db
from usage.models import UsageDay

pytestmark = inline_db

CATALOG = {
    "general": ["Hello there", "What can you do?"],
    "data-analysis": ["Chart revenue by month", "Sum the sales per region"],
    "ddr-authoring": ["Write a design decision record"],
    "workflow-authoring": [],
}


def set_catalog() -> None:
    """The catalog's utterances are exactly CATALOG's: examples, and no test utterances."""
    for key, utterances in CATALOG.items():
        AgentMode.objects.filter(key=key).update(example_utterances=utterances, test_utterances=[])


def switch(mode: str) -> tuple[str, dict]:
    return ("agent_change_mode", {"mode": mode, "branch": False, "reason": "The request belongs there."})


async def test_the_cases_are_every_active_modes_utterances_with_stay_for_the_defaults_own(team_a):
    await sync_to_async(set_catalog)()
    cases = await sync_to_async(routing_cases)(team=team_a)
    assert [(c.utterance, c.expected) for c in cases] == [
        ("Hello there", STAY),
        ("What can you do?", STAY),
        ("Write a design decision record", "ddr-authoring"),  # the catalog's order
        ("Chart revenue by month", "data-analysis"),
        ("Sum the sales per region", "data-analysis"),
    ]


async def test_a_modes_test_utterances_are_cases_after_its_examples_each_once(team_a):
    """Test utterances are never shown to the model (unlike examples), so they measure routing honestly."""
    await sync_to_async(set_catalog)()
    await AgentMode.objects.filter(key="ddr-authoring").aupdate(
        test_utterances=["Mark DDR TUL-012 as superseded", "Write a design decision record"]
    )
    cases = await sync_to_async(routing_cases)(team=team_a)
    ddr = [c.utterance for c in cases if c.expected == "ddr-authoring"]
    assert ddr == ["Write a design decision record", "Mark DDR TUL-012 as superseded"]


async def test_an_inactive_modes_utterances_are_not_cases(team_a):
    await sync_to_async(set_catalog)()
    await AgentMode.objects.filter(key="ddr-authoring").aupdate(is_active=False)
    cases = await sync_to_async(routing_cases)(team=team_a)
    assert "Write a design decision record" not in [c.utterance for c in cases]


async def test_a_scripted_run_gives_exactly_the_matrix_accuracy_and_precision_recall_it_implies(
    team_a, alice, model, llm
):
    await sync_to_async(set_catalog)()
    model.reply("Hi! How can I help?")  # Hello there → stay (right)
    model.reply(proposal_text("Data Analysis", "data-analysis"))  # What can you do? → data-analysis (wrong)
    model.reply(proposal_text("DDR Authoring", "ddr-authoring"))  # Write a DDR → ddr-authoring (right)
    model.reply("", tool_calls=[switch("data-analysis")])  # Chart revenue → data-analysis (right)
    model.reply("Here is the sum.")  # Sum the sales → stay (wrong)
    with use_runner(LocalRunner()):
        result = await routing_run(user=alice, team=team_a, limit=1)  # one at a time: the script's order

    assert [(c.utterance, c.expected, c.got, c.ok) for c in result.cases] == [
        ("Hello there", STAY, STAY, True),
        ("What can you do?", STAY, "data-analysis", False),
        ("Write a design decision record", "ddr-authoring", "ddr-authoring", True),
        ("Chart revenue by month", "data-analysis", "data-analysis", True),
        ("Sum the sales per region", "data-analysis", STAY, False),
    ]
    assert result.matrix == {
        "data-analysis": {"data-analysis": 1, STAY: 1},
        "ddr-authoring": {"ddr-authoring": 1},
        STAY: {"data-analysis": 1, STAY: 1},
    }
    assert result.accuracy == 0.6
    assert result.modes == {
        STAY: {"precision": 0.5, "recall": 0.5},
        "data-analysis": {"precision": 0.5, "recall": 0.5},
        "ddr-authoring": {"precision": 1.0, "recall": 1.0},
    }
    assert all(c.seconds >= 0 for c in result.cases)
    assert model.calls == 5  # one model call per case: a waiting mode change is never resumed

    # Nothing is left behind: every case's session is deleted, none changed mode, nothing waits.
    sessions = [s async for s in AgentSession.objects.filter(catalog_test=True)]
    assert len(sessions) == 5
    assert all(s.deleted_at is not None and s.mode == "general" for s in sessions)
    assert await ModeHistory.objects.acount() == 0
    assert not await ToolApproval.objects.filter(decision="").aexists()
    assert not await Turn.objects.filter(finished_at__isnull=True).aexists()
    # Tokens are the curator's, as any turn's, under the team the run ran in.
    tokens = sum(c.tokens for c in result.cases)
    assert tokens > 0
    counted = [(u.prompt_tokens + u.completion_tokens, u.turns) async for u in UsageDay.objects.filter(user=alice)]
    assert sum(t for t, _ in counted) == tokens and sum(n for _, n in counted) == 5


async def test_a_mode_change_call_is_recorded_not_made_and_leaves_nothing_waiting(team_a, alice, model, llm):
    await sync_to_async(set_catalog)()
    [case] = [c for c in await sync_to_async(routing_cases)(team=team_a) if c.utterance.startswith("Chart")]
    model.reply("", tool_calls=[switch("data-analysis")])
    with use_runner(LocalRunner()):
        result = await routing_run(user=alice, team=team_a, cases=[case])
    [got] = result.cases
    assert (got.got, got.ok, got.status) == ("data-analysis", True, "awaiting_approval")
    session = await AgentSession.objects.aget(catalog_test=True)
    assert session.mode == "general" and session.deleted_at is not None
    turn = await Turn.objects.aget(session=session)
    assert turn.status == "cancelled"
    [approval] = [a async for a in ToolApproval.objects.filter(turn=turn)]
    assert approval.kind == ToolApproval.Kind.MODE_CHANGE and approval.decision == ToolApproval.Decision.CANCELLED
    assert await ModeHistory.objects.acount() == 0


async def test_a_mode_change_call_waits_even_when_mode_changes_are_trusted(team_a, alice, model, llm):
    await sync_to_async(set_catalog)()
    [case] = [c for c in await sync_to_async(routing_cases)(team=team_a) if c.utterance.startswith("Chart")]
    model.reply("", tool_calls=[switch("data-analysis")])
    with override_settings(APTIX_MODE_CHANGE_CONSENT="trust"), use_runner(LocalRunner()):
        result = await routing_run(user=alice, team=team_a, cases=[case])
    assert [(c.got, c.status) for c in result.cases] == [("data-analysis", "awaiting_approval")]
    assert await ModeHistory.objects.acount() == 0
    assert (await AgentSession.objects.aget(catalog_test=True)).mode == "general"
    assert model.calls == 1


async def test_a_case_whose_turn_fails_is_an_error_not_a_stay(team_a, alice, model, llm):
    await sync_to_async(set_catalog)()
    [case] = [c for c in await sync_to_async(routing_cases)(team=team_a) if c.utterance.startswith("Hello")]
    model.error(500)
    with use_runner(LocalRunner()):
        result = await routing_run(user=alice, team=team_a, cases=[case])
    assert [(c.got, c.ok, c.status) for c in result.cases] == [("error", False, "failed")]
    assert result.accuracy == 0.0
    assert (await AgentSession.objects.aget(catalog_test=True)).deleted_at is not None


async def test_a_proposal_of_a_mode_by_its_name_only_counts_for_that_mode(team_a, alice, model, llm):
    await sync_to_async(set_catalog)()
    [case] = [c for c in await sync_to_async(routing_cases)(team=team_a) if c.utterance.startswith("Write")]
    ddr = await AgentMode.objects.aget(key="ddr-authoring")
    model.reply(
        f"This fits **{ddr.display_name}** better. Would you like to 1) stay, 2) switch this session, "
        "or 3) switch in a new session?"
    )
    with use_runner(LocalRunner()):
        result = await routing_run(user=alice, team=team_a, cases=[case])
    assert [(c.got, c.ok) for c in result.cases] == [("ddr-authoring", True)]


async def test_runs_go_at_most_the_configured_cases_at_once(team_a, alice, model, llm, monkeypatch):
    await sync_to_async(set_catalog)()
    for _ in range(5):
        model.reply("Sure.", chunk_delay=0.02)
    running, most = 0, 0
    real = routing.routing_case_run

    async def counted(**kwargs):
        nonlocal running, most
        running += 1
        most = max(most, running)
        try:
            return await real(**kwargs)
        finally:
            running -= 1

    monkeypatch.setattr(routing, "routing_case_run", counted)
    with override_settings(APTIX_CATALOG_TEST_CONCURRENCY=2), use_runner(LocalRunner()):
        result = await routing_run(user=alice, team=team_a)
    assert len(result.cases) == 5 and {c.got for c in result.cases} == {STAY}
    assert most == 2


def test_the_summary_counts_modes_only_got_too():
    class Case:
        def __init__(self, expected, got):
            self.expected, self.got = expected, got

    modes, accuracy, matrix = routing_summary([Case(STAY, STAY), Case("data-analysis", "unknown-mode")])
    assert accuracy == 0.5
    assert matrix == {STAY: {STAY: 1}, "data-analysis": {"unknown-mode": 1}}
    assert modes == {
        STAY: {"precision": 1.0, "recall": 1.0},
        "data-analysis": {"precision": None, "recall": 0.0},
        "unknown-mode": {"precision": 0.0, "recall": None},
    }
    assert routing_summary([]) == ({}, None, {})
