"""The catalog with its drafts applied (modes/drafts.py): each mode's latest draft, pending or approved
version newer than its published one stands in for it — its fields, active flag, teams and default — in
everything a session over the drafts (AgentSession.catalog_drafts) reads of the catalog: its turn's
mode and prompt, the modes the agent lists, the offline model's proposals, the modes it may move to,
and a routing run's cases. Every other session reads the published catalog, and only that."""

from __future__ import annotations

import asyncio
import contextvars
import json

import pytest
from asgiref.sync import sync_to_async
from django.core.exceptions import ValidationError

from agents.approvals import UserDecision, approval_decide
from agents.catalog_tests import STAY, RoutingCase, routing_cases, routing_run
from agents.catalog_tests.cases import case_session_create
from agents.models import AgentSession, Turn
from agents.run.loading import load_run
from agents.run.reasoner import Reasoner
from agents.run.runners import LocalRunner
from agents.runner import use_runner
from agents.sessions import session_create, session_manager
from agents.turns import turn_start
from modes.catalog import (
    ModeValidationError,
    active_modes,
    catalog_service,
    default_mode_key,
    drafts_applied,
    mode_validate,
)
from modes.drafts import catalog_drafts
from modes.models import AgentMode, ModeHistory
from modes.proposal import proposal_text
from modes.versions import draft_save, mode_create, version_approve, version_publish, version_reject
from tests.helpers import inline_db

pytestmark = inline_db

TRAVEL = "travel-planning"
TRAVEL_EXAMPLE = "Book a flight and a hotel for the team offsite in Lisbon"
TRAVEL_TEST = "Find a cheaper flight and hotel for my Berlin trip"
DATA_DRAFT_DESCRIPTION = "Numbers, drafted."


def new_mode_as_draft() -> AgentMode:
    """A mode created without publishing (an import without --publish): inactive, its version 1 a draft
    that says active."""
    mode = AgentMode(
        key=TRAVEL,
        display_name="Travel Planning",
        description="Booking flights, hotels and trips for business travel.",
        example_utterances=[TRAVEL_EXAMPLE],
        test_utterances=[TRAVEL_TEST],
        ordering=5,
    )
    mode_create(mode=mode, by=None, publish=False)
    return AgentMode.objects.get(key=TRAVEL)


def drafted_catalog() -> None:
    """Drafts of three kinds: a changed description, a deactivation, and a new mode."""
    draft_save(mode="data-analysis", fields={"description": DATA_DRAFT_DESCRIPTION}, author=None)
    draft_save(mode="workflow-authoring", fields={"is_active": False}, author=None)
    new_mode_as_draft()


def keys(modes) -> list[str]:
    return [mode.key for mode in modes]


async def in_own_task(coro):
    """Run a turn as a runner does: in a task with a context of its own (the run's catalog choice
    stays the run's)."""
    return await asyncio.get_running_loop().create_task(coro, context=contextvars.Context())


# --- which version is a mode's draft ------------------------------------------------------------


def test_a_modes_draft_is_its_latest_version_not_live_nor_rejected_and_newer_than_the_published():
    two = draft_save(mode="data-analysis", fields={"description": "Draft two."}, author=None)
    three = draft_save(mode="data-analysis", fields={"description": "Draft three."}, author=None)
    assert catalog_drafts()["data-analysis"].number == three.number

    version_reject(version=three, by=None)
    assert catalog_drafts()["data-analysis"].number == two.number  # a rejected version is never applied

    version_approve(version=two, by=None)
    assert catalog_drafts()["data-analysis"].number == two.number  # approved, not yet published: a draft

    version_publish(version=two, by=None)
    assert "data-analysis" not in catalog_drafts()  # live now; the rejected one stays out

    older = draft_save(mode="ddr-authoring", fields={"description": "Older."}, author=None)
    newer = draft_save(mode="ddr-authoring", fields={"description": "Newer."}, author=None)
    version_publish(version=newer, by=None)
    assert "ddr-authoring" not in catalog_drafts()  # `older` is older than the published version
    assert older.number < newer.number


# --- the catalog with drafts applied ------------------------------------------------------------


def test_with_drafts_applied_the_catalog_is_the_drafts_and_without_it_the_published_one(team_a):
    drafted_catalog()
    published = active_modes(team=team_a)
    assert TRAVEL not in keys(published) and "workflow-authoring" in keys(published)
    assert DATA_DRAFT_DESCRIPTION not in [mode.description for mode in published]
    with pytest.raises(ModeValidationError):
        mode_validate(TRAVEL, team=team_a)

    with drafts_applied():
        drafted = active_modes(team=team_a)
        assert keys(drafted)[0] == TRAVEL  # a new mode only its draft makes active, in its draft's order
        assert "workflow-authoring" not in keys(drafted)  # its draft deactivates it
        data = next(mode for mode in drafted if mode.key == "data-analysis")
        assert data.description == DATA_DRAFT_DESCRIPTION
        assert mode_validate(TRAVEL, team=team_a).key == TRAVEL
        with pytest.raises(ModeValidationError):
            mode_validate("workflow-authoring", team=team_a)
        listed = catalog_service.get_modes_for_team_sync(team_a)
        assert TRAVEL in keys(listed) and "workflow-authoring" not in keys(listed)
        assert [m.key for m in listed if m.is_default] == ["general"]

    # Nothing live changed: the rows are the published entries.
    assert AgentMode.objects.get(key="data-analysis").description != DATA_DRAFT_DESCRIPTION
    assert AgentMode.objects.get(key="workflow-authoring").is_active
    assert not AgentMode.objects.get(key=TRAVEL).is_active


def test_a_drafts_teams_and_default_apply_with_it(team_a, team_b):
    draft_save(mode="ddr-authoring", fields={"teams": ["team-b"]}, author=None)
    draft_save(mode="data-analysis", fields={"is_default": True}, author=None)
    with drafts_applied():
        assert "ddr-authoring" not in keys(active_modes(team=team_a))
        assert "ddr-authoring" in keys(active_modes(team=team_b))
        assert default_mode_key() == "data-analysis"  # publishing it would make it the default
        cases = routing_cases(team=team_a, drafts=True)
    assert default_mode_key() == "general" and "ddr-authoring" in keys(active_modes(team=team_a))
    expected = {case.mode: case.expected for case in cases}
    assert expected["data-analysis"] == STAY and expected["general"] == "general"


def test_there_is_one_default_with_drafts_applied_as_publishing_them_would_leave_it(team_a):
    draft_save(mode="general", fields={"is_default": False}, author=None)  # handed on to no one
    with drafts_applied():
        assert default_mode_key() == "general"  # publishing it keeps it the default until another is
        assert [m.key for m in active_modes(team=team_a) if m.is_default] == ["general"]
    draft_save(mode="ddr-authoring", fields={"is_default": True}, author=None)
    with drafts_applied():
        assert [m.key for m in active_modes(team=team_a) if m.is_default] == ["ddr-authoring"]
    assert [m.key for m in active_modes(team=team_a) if m.is_default] == ["general"]


def test_reading_the_published_catalog_costs_one_query_whatever_the_drafts(team_a, django_assert_num_queries):
    drafted_catalog()
    with django_assert_num_queries(1):
        active_modes(team=team_a)


def test_routing_cases_over_the_drafts_are_the_drafts_utterances(team_a):
    drafted_catalog()
    draft_save(
        mode="data-analysis",
        fields={"example_utterances": ["Plot churn by cohort"], "test_utterances": ["Average basket by weekday"]},
        author=None,
    )
    published = routing_cases(team=team_a)
    drafted = routing_cases(team=team_a, drafts=True)
    assert len([c for c in published if c.mode == "data-analysis"]) == 11  # the seed's 6 examples and 5 tests
    assert [c.utterance for c in drafted if c.mode == "data-analysis"] == [
        "Plot churn by cohort",
        "Average basket by weekday",
    ]
    assert [(c.utterance, c.expected) for c in drafted if c.mode == TRAVEL] == [
        (TRAVEL_EXAMPLE, TRAVEL),
        (TRAVEL_TEST, TRAVEL),
    ]
    assert TRAVEL not in {c.mode for c in published}
    assert "workflow-authoring" in {c.mode for c in published}
    assert "workflow-authoring" not in {c.mode for c in drafted}


# --- sessions over the drafts -------------------------------------------------------------------


def test_a_case_session_over_the_drafts_may_be_in_a_mode_only_a_draft_makes_active(team_a, alice):
    new_mode_as_draft()
    with pytest.raises(ValidationError) as refused:
        case_session_create(user=alice, team=team_a, mode=TRAVEL)
    assert "Unknown or inactive mode 'travel-planning'" in str(refused.value)

    session = case_session_create(user=alice, team=team_a, mode=TRAVEL, drafts=True)
    turn_start(session=session, text=TRAVEL_TEST)  # its turn keeps the mode: it is active over the drafts
    session.refresh_from_db()
    assert (session.mode, session.catalog_drafts) == (TRAVEL, True)
    assert not ModeHistory.objects.filter(session=session).exists()

    # A user's session never is: the published catalog has no such mode.
    with pytest.raises(ValidationError):
        session_create(team=team_a, user=alice, mode=TRAVEL)


def test_a_mode_change_over_the_drafts_may_go_to_a_mode_only_a_draft_makes_active(team_a, alice):
    new_mode_as_draft()
    session = case_session_create(user=alice, team=team_a, drafts=True)
    with pytest.raises(ModeValidationError):
        session_manager.set_session_mode_sync(session.id, TRAVEL, "Travel request.", team_a, alice)
    with drafts_applied():  # as the run of such a session reads the catalog
        session_manager.set_session_mode_sync(session.id, TRAVEL, "Travel request.", team_a, alice)
    session.refresh_from_db()
    assert session.mode == TRAVEL


async def test_an_approved_mode_change_over_the_drafts_may_go_where_only_a_draft_leads(team_a, alice, model, llm):
    """As a check run approves what its turn asks for: the change is validated against the run's catalog."""
    await sync_to_async(new_mode_as_draft)()
    switch = json.dumps({"mode": TRAVEL, "branch": False, "reason": "A travel request."})
    outcomes = {}
    for drafts in (False, True):
        session = await sync_to_async(case_session_create)(user=alice, team=team_a, drafts=drafts)
        asked = model.reply("", tool_calls=[("agent_change_mode", switch)])
        turn = await sync_to_async(turn_start)(session=session, text=TRAVEL_TEST)
        await in_own_task(Reasoner().run(turn.id))
        assert (await Turn.objects.aget(pk=turn.id)).status == "awaiting_approval"
        decision = UserDecision(asked.tool_calls[0].id, True)
        assert await sync_to_async(approval_decide)(turn=turn, decisions=[decision], user=alice)
        await in_own_task(Reasoner().run(turn.id))
        [result] = [e.payload async for e in turn.events.filter(type="tool.result")]
        outcomes[drafts] = ((await AgentSession.objects.aget(pk=session.id)).mode, result["ok"], result.get("error"))
    assert outcomes[True] == (TRAVEL, True, None)
    mode, ok, error = outcomes[False]
    assert (mode, ok) == ("general", False) and "Unknown or inactive mode 'travel-planning'" in error


async def test_a_turn_over_the_drafts_runs_its_modes_draft_and_any_other_the_published(team_a, alice, model, llm):
    draft = await sync_to_async(draft_save)(
        mode="data-analysis", fields={"system_prompt": "Answer from the DRAFT prompt."}, author=None
    )
    over_drafts = await sync_to_async(case_session_create)(user=alice, team=team_a, mode="data-analysis", drafts=True)
    published = await sync_to_async(session_create)(team=team_a, user=alice, mode="data-analysis")
    loaded, prompts = [], []
    for session in (over_drafts, published):
        model.reply("Sure.")
        turn = await sync_to_async(turn_start)(session=session, text="How many orders?")
        loaded.append(await load_run(turn.id))
        await in_own_task(Reasoner().run(turn.id))
        prompts.append(model.last_messages[0]["content"])  # the system prompt the model was sent
    assert "Answer from the DRAFT prompt." in prompts[0] and "DRAFT" not in prompts[1]
    drafted_run, published_run = loaded
    assert (drafted_run.draft, drafted_run.mode_version) == (True, draft.number)
    assert drafted_run.mode.system_prompt == "Answer from the DRAFT prompt."
    row = await AgentMode.objects.aget(key="data-analysis")
    assert (published_run.draft, published_run.mode_version) == (False, row.version)
    assert published_run.mode.system_prompt == row.system_prompt


async def test_the_agent_lists_the_drafts_catalog_only_in_a_session_over_the_drafts(team_a, alice, model, llm):
    await sync_to_async(drafted_catalog)()
    published = await sync_to_async(session_create)(team=team_a, user=alice)
    over_drafts = await sync_to_async(case_session_create)(user=alice, team=team_a, drafts=True)
    listed = {}
    for session in (published, over_drafts):
        model.reply("Looking.", tool_calls=[("agent_list_modes", "{}")])
        turn = await sync_to_async(turn_start)(session=session, text="What modes are there?")
        await in_own_task(Reasoner().run(turn.id))
        [result] = [e.payload async for e in (await Turn.objects.aget(pk=turn.id)).events.filter(type="tool.result")]
        listed[session.id] = {m["key"]: m["description"] for m in json.loads(result["result"])["modes"]}

    seen = listed[published.id]
    assert TRAVEL not in seen and "workflow-authoring" in seen
    assert seen["data-analysis"] != DATA_DRAFT_DESCRIPTION
    drafted = listed[over_drafts.id]
    assert TRAVEL in drafted and "workflow-authoring" not in drafted
    assert drafted["data-analysis"] == DATA_DRAFT_DESCRIPTION


async def test_the_offline_model_proposes_a_mode_only_a_draft_makes_active_only_over_the_drafts(team_a, alice):
    await sync_to_async(new_mode_as_draft)()
    case = RoutingCase(utterance=TRAVEL_EXAMPLE, expected=TRAVEL, mode=TRAVEL)
    with use_runner(LocalRunner()):
        published = await routing_run(user=alice, team=team_a, cases=[case])
        drafted = await routing_run(user=alice, team=team_a, cases=[case], drafts=True)
    assert [(c.got, c.ok) for c in published.cases] == [(STAY, False)]
    assert [(c.got, c.ok) for c in drafted.cases] == [(TRAVEL, True)]
    sessions = [s async for s in AgentSession.objects.filter(catalog_test=True).order_by("created_at")]
    assert [s.catalog_drafts for s in sessions] == [False, True]


async def test_a_proposal_by_name_of_a_mode_only_a_draft_makes_active_counts_for_it(team_a, alice, model, llm):
    await sync_to_async(new_mode_as_draft)()
    case = RoutingCase(utterance=TRAVEL_TEST, expected=TRAVEL, mode=TRAVEL)
    model.reply(
        "This fits **Travel Planning** better. Would you like to 1) stay, 2) switch this session, "
        "or 3) switch in a new session?"
    )
    model.reply(proposal_text("Travel Planning", TRAVEL))
    with use_runner(LocalRunner()):
        by_name = await routing_run(user=alice, team=team_a, cases=[case], drafts=True)
        by_key = await routing_run(user=alice, team=team_a, cases=[case], drafts=True)
    assert [(c.got, c.ok) for c in [*by_name.cases, *by_key.cases]] == [(TRAVEL, True), (TRAVEL, True)]
