"""Validating a set of mode files before anything is written: each problem names the file, the line and
the field, every problem of a run is listed, and a plan with any problem writes nothing."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError

from modes.files.format import UNKNOWN_KEY
from modes.files.plan import CHANGED, ERROR_PLAN_HAS_PROBLEMS, NEW, UNCHANGED, apply_plan, export_files, plan_import
from modes.files.sources import MODE, VSCODE, Source
from modes.models import ERROR_DEFAULT_CANNOT_BE_UNSET, ERROR_DEFAULT_MUST_BE_ACTIVE, AgentMode, ModeVersion
from modes.services import ERROR_DEFAULT_FOR_EVERY_TEAM
from modes.versions import version_publish
from tests.helpers.mode_files import catalog_snapshot

pytestmark = pytest.mark.django_db

DDR = """---
key: ddr
name: DDR
description: Design decisions
order: 3
tools:
  - image_gen
teams:
  - team-a
---

Write DDRs.
"""


def problems_of(*files: tuple[str, str], kind: str = MODE) -> list[str]:
    return [str(problem) for problem in plan_import([Source(name, text, kind) for name, text in files]).problems]


def test_a_valid_new_file_plans_as_new_with_its_values(team_a):
    plan = plan_import([Source("ddr.mode.md", DDR, MODE)])
    assert plan.problems == []
    (mode,) = plan.modes
    assert (mode.key, mode.status) == ("ddr", NEW)
    assert mode.values["tool_policy"] == ["image_gen"] and mode.values["teams"] == ["team-a"]
    assert mode.values["system_prompt"] == "Write DDRs."
    assert mode.values["is_active"] is True and mode.values["is_default"] is False  # left out: the defaults


@pytest.mark.parametrize(
    ("before", "after", "expected"),
    [
        ("tools:\n  - image_gen\n", "tools: image_gen\n", "ddr.mode.md:6: tools: expected a list of strings"),
        ("tools:\n  - image_gen\n", "tools:\n  - 3\n", "ddr.mode.md:6: tools: expected a list of strings"),
        ("order: 3\n", "order: three\n", "ddr.mode.md:5: order: expected a whole number, 0 or more"),
        ("order: 3\n", "order: -1\n", "ddr.mode.md:5: order: expected a whole number, 0 or more"),
        ("order: 3\n", "order: 3\ndefault: yes please\n", "ddr.mode.md:6: default: expected true or false"),
        ("order: 3\n", "order: 3\nexecution: fast\n", "ddr.mode.md:6: execution: expected ask or agent"),
        ("name: DDR\n", "name: 2024-01-01\n", "ddr.mode.md:3: name: expected a string"),
        ("order: 3\n", "order: 3\ncolour: red\n", f"ddr.mode.md:6: colour: {UNKNOWN_KEY}"),
        ("order: 3\n", "order: 3\ntests: Plan my week\n", "ddr.mode.md:6: tests: expected a list of strings"),
        ("order: 3\n", "order: 3\ntests:\n  - Plan\n  - ''\n", "ddr.mode.md:8: tests: Item 2 must be a non-empty"),
        ("order: 3\n", "order: 3\nchecks: {}\n", "ddr.mode.md:6: checks: expected a list"),
        (
            "order: 3\n",
            "order: 3\nchecks:\n  - prompt: Hi\n    expect:\n      tool: a\n"
            "  - prompt: Hi\n    expect:\n      tool: 3\n",
            "ddr.mode.md:10: checks: checks[1].expect.tool: expected a string",
        ),
        (
            "key: ddr\n",
            "key: ddr-authoring\n",
            "ddr.mode.md:2: key: 'ddr-authoring' does not match the file name: the file of the mode "
            "'ddr-authoring' is ddr-authoring.mode.md",
        ),
        ("  - team-a\n", "  - team-a\n  - ops\n", "ddr.mode.md:10: teams: no team 'ops' (teams: team-a)"),
        (
            "  - image_gen\n",
            "  - image gen\n",
            "ddr.mode.md:6: tools: Invalid tool policy entries: 'image gen'. Use '*', a tool name such as "
            "'image_gen', '<server>.*' or '<server>.<tool>'.",
        ),
        ("order: 3\n", "order: 3\napprovals:\n  - sql.*\n", "ddr.mode.md:6: approvals: Invalid approval policy"),
        ("description: Design decisions\n", "", "ddr.mode.md:1: description: This field cannot be blank."),
        (
            "order: 3\n",
            "order: 3\nactive: false\ndefault: true\n",
            f"ddr.mode.md:6: active: {ERROR_DEFAULT_MUST_BE_ACTIVE}",
        ),
        ("order: 3\n", "order: 3\norder: 4\n", "ddr.mode.md:6: order: duplicate key (first at line 5)"),
        (
            "name: DDR\n",
            "name: [DDR\n",
            "ddr.mode.md:4: YAML syntax error: expected ',' or ']', but got ':' "
            "(while parsing a flow sequence at line 3)",
        ),
        ("name: DDR\n", "name: DDR\n\tbad: tab\n", "ddr.mode.md:4: YAML syntax error:"),
        ("name: DDR\n", "name: &n DDR\ndescription: *n\n", "ddr.mode.md:4: YAML aliases (*name) are not allowed"),
    ],
)
def test_each_problem_names_the_file_the_line_and_the_field(team_a, before, after, expected):
    text = DDR.replace(before, after, 1)
    assert text != DDR
    found = problems_of(("ddr.mode.md", text))
    assert any(problem.startswith(expected) for problem in found), found


def test_a_file_without_front_matter_or_unclosed_is_refused(team_a):
    assert problems_of(("ddr.mode.md", "Write DDRs.\n")) == [
        "ddr.mode.md:1: expected front matter: the file starts with a '---' line"
    ]
    assert problems_of(("ddr.mode.md", "---\nname: DDR\n")) == [
        "ddr.mode.md:1: the front matter is not closed: no '---' line after it"
    ]
    assert problems_of(("ddr.mode.md", "---\n- a list\n---\n")) == [
        "ddr.mode.md:2: the front matter must be a mapping of keys to values"
    ]


def test_every_problem_of_every_file_is_listed_in_one_run(team_a):
    bad_order = DDR.replace("order: 3", "order: x")
    bad_tools = DDR.replace("key: ddr", "key: other").replace("  - image_gen", "  - image gen")
    found = problems_of(("ddr.mode.md", bad_order), ("other.mode.md", bad_tools.replace("colour", "")))
    assert [problem.split(":")[0] for problem in found] == ["ddr.mode.md", "other.mode.md"]


def test_two_files_for_one_mode_are_refused(team_a):
    vscode = Source("ddr.agent.md", "---\nname: DDR\ndescription: From VS Code\n---\nHi\n", VSCODE)
    plan = plan_import([Source("ddr.mode.md", DDR, MODE), vscode])
    assert [str(p) for p in plan.problems] == [
        "ddr.mode.md:2: key: the mode 'ddr' is also in ddr.agent.md: one file per mode"
    ]


def test_the_catalog_keeps_exactly_one_default():
    files = export_files()
    general = files["general.mode.md"]
    two = files["data-analysis.mode.md"].replace("default: false", "default: true")
    found = problems_of(("data-analysis.mode.md", two), ("general.mode.md", general))
    line = general.splitlines().index("default: true") + 1
    assert found == [
        f"general.mode.md:{line}: default: only one mode can be the default, and data-analysis.mode.md already "
        "says it is"
    ]
    none = general.replace("default: true", "default: false")
    assert problems_of(("general.mode.md", none)) == [
        f"general.mode.md:{line}: default: {ERROR_DEFAULT_CANNOT_BE_UNSET}"
    ]


def test_moving_the_default_to_another_mode_in_the_files_is_allowed():
    files = export_files()
    general = files["general.mode.md"].replace("default: true", "default: false")
    analysis = files["data-analysis.mode.md"].replace("default: false", "default: true")
    plan = plan_import([Source("general.mode.md", general, MODE), Source("data-analysis.mode.md", analysis, MODE)])
    assert plan.problems == []
    assert [m.status for m in plan.modes] == [CHANGED, CHANGED]
    done = apply_plan(plan, publish=False)  # two drafts: nothing live moves yet
    assert [(d.key, d.state) for d in done] == [("data-analysis", "draft"), ("general", "draft")]
    assert list(AgentMode.objects.filter(is_default=True).values_list("key", flat=True)) == ["general"]
    drafts = {v.mode.key: v for v in ModeVersion.objects.filter(state=ModeVersion.State.DRAFT).select_related("mode")}
    assert (drafts["general"].snapshot["is_default"], drafts["data-analysis"].snapshot["is_default"]) == (False, True)
    # Published in the wrong order, general stays the default until data-analysis takes it over.
    version_publish(version=drafts["general"], by=None)
    assert list(AgentMode.objects.filter(is_default=True).values_list("key", flat=True)) == ["general"]
    version_publish(version=drafts["data-analysis"], by=None)
    assert list(AgentMode.objects.filter(is_default=True).values_list("key", flat=True)) == ["data-analysis"]


def test_a_published_import_moves_the_default_at_once():
    files = export_files()
    general = files["general.mode.md"].replace("default: true", "default: false")
    analysis = files["data-analysis.mode.md"].replace("default: false", "default: true")
    plan = plan_import([Source("general.mode.md", general, MODE), Source("data-analysis.mode.md", analysis, MODE)])
    apply_plan(plan, publish=True)
    assert list(AgentMode.objects.filter(is_default=True).values_list("key", flat=True)) == ["data-analysis"]


def test_a_plan_with_a_problem_is_never_applied(team_a):
    before = catalog_snapshot()
    plan = plan_import([Source("ddr.mode.md", DDR, MODE), Source("bad.mode.md", "no front matter", MODE)])
    assert [m.status for m in plan.modes] == [NEW]
    with pytest.raises(ValidationError, match=ERROR_PLAN_HAS_PROBLEMS):
        apply_plan(plan, publish=False)
    assert catalog_snapshot() == before


def test_an_unchanged_file_is_skipped():
    files = export_files()
    plan = plan_import([Source(name, text, MODE) for name, text in files.items()])
    assert {m.status for m in plan.modes} == {UNCHANGED} and plan.writes == []
    assert plan.summary() == "0 new, 0 changed, 4 unchanged"


def test_teams_on_the_default_mode_are_refused_naming_the_line(team_a):
    files = export_files()
    general = files["general.mode.md"].replace("---\n\n", "teams:\n  - team-a\n---\n\n", 1)
    plan = plan_import([Source("general.mode.md", general, MODE)])
    line = general.splitlines().index("teams:") + 1
    assert [str(p) for p in plan.problems] == [f"general.mode.md:{line}: teams: {ERROR_DEFAULT_FOR_EVERY_TEAM}"]
