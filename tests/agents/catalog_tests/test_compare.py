"""Compare (agents/catalog_tests/compare.py): the routing run over the published catalog and over the
catalog with its drafts applied, both accuracies, and every case whose result changed. A draft that
breaks routing — data-analysis with its description and examples emptied — shows as a drop, naming
the data questions that no longer go to data-analysis; a draft that adds a mode shows its cases in the
drafts run alone. What changed, and which checks broke, are plain functions of the runs' results."""

from __future__ import annotations

from dataclasses import dataclass

from asgiref.sync import sync_to_async

from agents.catalog_tests import STAY, CaseChange, CaseResult, cases_changed, checks_changed, routing_compare
from agents.catalog_tests.compare import ADDED, CHANGED, REMOVED, CompareResult
from agents.catalog_tests.routing import RoutingResult
from agents.run.runners import LocalRunner
from agents.runner import use_runner
from modes.models import AgentMode
from modes.versions import draft_save, mode_create
from tests.helpers import inline_db

pytestmark = inline_db

# The seed catalog routed by the offline model (tests/agents/catalog_tests' command test measures it).
SEED_CASES, SEED_RIGHT = 43, 37
# Data Analysis's examples, gone with the draft below: their cases are in the published run alone.
DATA_EXAMPLES = [
    "Show me monthly revenue for the last 12 months as a chart",
    "Which customers placed the most orders last quarter?",
    "Write a SQL query for average order value by region",
    "What tables are in the database and how are orders linked to customers?",
    "Chart the number of new customers per week this year",
    "Compare revenue by product category between 2023 and 2024",
]
# Its test utterances that the offline model routed to it from the published description and examples,
# and that stay in Ask once they are emptied. ("List the top customers by total spend" stayed before.)
NOW_STAY = [
    "How many orders did we get last month?",
    "Which product category brings in the most revenue?",
    "What is the average order value per month?",
    "Show revenue per region as a table",
]


def case(utterance: str, expected: str, got: str) -> CaseResult:
    return CaseResult(utterance=utterance, expected=expected, got=got, ok=got == expected, tokens=0, seconds=0.0)


# --- what changed: plain functions --------------------------------------------------------------


def test_cases_changed_lists_every_case_whose_result_differs_and_those_of_one_run_only():
    before = [
        case("Hello", STAY, STAY),
        case("Chart revenue", "data-analysis", "data-analysis"),
        case("Write a DDR", "ddr-authoring", "ddr-authoring"),
        case("Sum sales", "data-analysis", STAY),
        case("Old example", "data-analysis", "data-analysis"),
    ]
    after = [
        case("Hello", STAY, STAY),  # the same: not listed
        case("Chart revenue", "data-analysis", STAY),  # got changed
        case("Write a DDR", "workflow-authoring", "ddr-authoring"),  # a draft moved it: same got, now wrong
        case("Sum sales", "data-analysis", "ddr-authoring"),  # wrong before and after, but elsewhere
        case("Book a flight", "travel-planning", "travel-planning"),  # a draft added it
    ]
    assert cases_changed(before, after) == [
        CaseChange("Chart revenue", "data-analysis", STAY, True, False, "data-analysis", "data-analysis"),
        CaseChange("Write a DDR", "ddr-authoring", "ddr-authoring", True, False, "ddr-authoring", "workflow-authoring"),
        CaseChange("Sum sales", STAY, "ddr-authoring", False, False, "data-analysis", "data-analysis"),
        CaseChange("Book a flight", None, "travel-planning", None, True, None, "travel-planning", ADDED),
        CaseChange("Old example", "data-analysis", None, True, None, "data-analysis", None, REMOVED),
    ]
    moved = cases_changed(before, after)[1]
    assert moved.expected_changed and moved.change == CHANGED
    assert not cases_changed(before, after)[0].expected_changed
    assert cases_changed(before, before) == []


def test_an_utterance_two_modes_list_is_two_cases_matched_in_order():
    before = [case("Plan it", "ddr-authoring", "ddr-authoring"), case("Plan it", "workflow-authoring", STAY)]
    after = [case("Plan it", "ddr-authoring", "ddr-authoring")]
    assert cases_changed(before, after) == [
        CaseChange("Plan it", STAY, None, False, None, "workflow-authoring", None, REMOVED)
    ]


@dataclass(frozen=True)
class Check:
    mode: str
    prompt: str
    ok: bool
    failed: tuple[str, ...] = ()


def test_checks_changed_gives_the_checks_that_passed_before_and_fail_now():
    before = [
        Check("data-analysis", "Revenue by month?", True),
        Check("data-analysis", "What modes are there?", True),
        Check("ddr-authoring", "Write a DDR", False),
        Check("general", "Hello", True),
    ]
    after = [
        Check("data-analysis", "Revenue by month?", False, ("sql__query was not called",)),  # broke
        Check("data-analysis", "What modes are there?", True),
        Check("ddr-authoring", "Write a DDR", False),  # failed before too: not a change the draft made
        Check("workflow-authoring", "Design a flow", False),  # new with the draft: it never passed
    ]
    assert checks_changed(before, after) == [
        Check("data-analysis", "Revenue by month?", False, ("sql__query was not called",))
    ]
    assert checks_changed(before, before) == []


def test_a_comparison_dropped_when_the_drafts_route_worse_and_warns_of_a_broken_check_too():
    def compared(before: float | None, after: float | None, **extra) -> CompareResult:
        return CompareResult(published=RoutingResult(accuracy=before), drafted=RoutingResult(accuracy=after), **extra)

    assert compared(0.9, 0.8).dropped and compared(0.9, 0.8).warn
    assert not compared(0.8, 0.8).dropped and not compared(0.8, 0.9).dropped
    assert not compared(None, 0.5).dropped and not compared(0.5, None).dropped  # a run without cases
    broken = compared(0.8, 0.9, broken_checks=[Check("general", "Hello", False)])
    assert not broken.dropped and broken.warn
    assert broken.as_dict()["broken_checks"] == [{"mode": "general", "prompt": "Hello"}]


# --- Compare with the offline model -------------------------------------------------------------


async def test_emptying_data_analysis_drops_accuracy_and_its_data_questions_now_stay(team_a, alice):
    draft = await sync_to_async(draft_save)(
        mode="data-analysis", fields={"description": "TBD.", "example_utterances": []}, author=None
    )
    with use_runner(LocalRunner()):
        result = await routing_compare(user=alice, team=team_a)

    assert result.drafts == {"data-analysis": draft.number}
    assert len(result.published.cases) == SEED_CASES and sum(c.ok for c in result.published.cases) == SEED_RIGHT
    assert result.published_accuracy == round(SEED_RIGHT / SEED_CASES, 4)
    drafted_cases = SEED_CASES - len(DATA_EXAMPLES)
    drafted_right = SEED_RIGHT - len(DATA_EXAMPLES) - len(NOW_STAY)
    assert result.drafts_accuracy == round(drafted_right / drafted_cases, 4)
    assert result.dropped and result.warn
    assert [(c.utterance, c.change, c.got_before, c.got_after, c.ok_before, c.ok_after) for c in result.changed] == [
        *[(text, CHANGED, "data-analysis", STAY, True, False) for text in NOW_STAY],
        *[(text, REMOVED, "data-analysis", None, True, None) for text in DATA_EXAMPLES],
    ]
    body = result.as_dict()
    assert body["dropped"] is True and body["drafts"] == {"data-analysis": draft.number}
    assert body["changed"][0] == {
        "utterance": NOW_STAY[0],
        "got_before": "data-analysis",
        "got_after": STAY,
        "ok_before": True,
        "ok_after": False,
        "expected_before": "data-analysis",
        "expected_after": "data-analysis",
        "change": CHANGED,
    }


async def test_a_new_modes_draft_shows_its_cases_in_the_drafts_run_only(team_a, alice):
    travel = AgentMode(
        key="travel-planning",
        display_name="Travel Planning",
        description="Booking flights, hotels and trips for business travel.",
        example_utterances=["Book a flight and a hotel for the team offsite in Lisbon"],
        ordering=5,
    )
    version = await sync_to_async(mode_create)(mode=travel, by=None, publish=False)
    with use_runner(LocalRunner()):
        result = await routing_compare(user=alice, team=team_a)

    assert result.drafts == {"travel-planning": version.number}
    assert "travel-planning" not in {c.mode for c in result.published.cases}
    assert [(c.utterance, c.change, c.got_after, c.ok_after) for c in result.changed] == [
        ("Book a flight and a hotel for the team offsite in Lisbon", ADDED, "travel-planning", True)
    ]
    assert len(result.drafted.cases) == SEED_CASES + 1
    assert not result.dropped  # one more case, and right
