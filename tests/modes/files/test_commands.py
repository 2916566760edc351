"""`catalog_export DIR` and `catalog_import DIR [--publish] [--dry-run]` as a curator uses them with git:
export, edit a file in a text editor, import, and see exactly that change."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from aptix.models import Team
from modes.management.commands import catalog_import
from modes.models import AgentMode, CatalogEvent, ModeVersion
from modes.services import mode_save
from tests.helpers.mode_files import catalog_snapshot, edit

pytestmark = pytest.mark.django_db


def run(*args: str) -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    call_command(*args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


@pytest.fixture
def curated_catalog(team_a, team_b):
    """The seed catalog plus what a curator sets: teams, an inactive mode, a changed default and order,
    a model, a per-mode Ask follow-up, an approval policy and prompts with awkward whitespace."""
    ddr = AgentMode.objects.get(key="ddr-authoring")
    ddr.ordering, ddr.model, ddr.ask_followup = 5, "gpt-4o", True
    ddr.approval_policy = ["notes.*: ask", "sql.*: auto"]
    ddr.system_prompt = "Line one\n\n  indented line\nlast line with trailing newline\n"
    ddr.description = "Two lines:\nthe second: with a colon # and a hash"
    ddr.test_utterances = ["yes", "Review DDR: TUL-7 # now", "  leading spaces"]
    ddr.checks = [
        {"expect": {"not_contains": "Sorry", "tool": "document_write"}, "prompt": "Draft a DDR:\nfor caching"},
        {"prompt": "no", "execution": "agent", "expect": {"status": "failed", "contains": "null"}},
    ]
    mode_save(mode=ddr)
    ddr.teams.set([team_b, team_a])
    workflow = AgentMode.objects.get(key="workflow-authoring")
    workflow.is_active, workflow.ask_followup, workflow.execution = False, False, "ask"
    workflow.example_utterances = ["yes", "- a dash", "'quoted'", "null"]
    mode_save(mode=workflow)
    analysis = AgentMode.objects.get(key="data-analysis")
    analysis.is_default = True
    mode_save(mode=analysis)
    mode_save(
        mode=AgentMode(key="empty-prompt", display_name="No prompt", description="A mode with no prompt", ordering=7)
    )
    return catalog_snapshot()


def test_export_then_import_on_a_clean_database_reproduces_the_catalog(tmp_path, curated_catalog):
    out, _ = run("catalog_export", str(tmp_path))
    assert "Wrote 5 mode files" in out
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "data-analysis.mode.md",
        "ddr-authoring.mode.md",
        "empty-prompt.mode.md",
        "general.mode.md",
        "workflow-authoring.mode.md",
    ]
    ModeVersion.objects.all().delete()
    AgentMode.objects.all().delete()  # a clean database: no catalog at all

    out, _ = run("catalog_import", str(tmp_path), "--publish")

    assert out.count("new: ") == 5 and out.count(", version 1 published") == 5
    assert catalog_snapshot() == curated_catalog
    assert AgentMode.objects.get(key="data-analysis").is_default
    assert AgentMode.objects.get(key="ddr-authoring").system_prompt.endswith("trailing newline\n")


def test_export_then_import_changes_nothing_and_export_again_writes_the_same_bytes(tmp_path, curated_catalog):
    run("catalog_export", str(tmp_path))
    first = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    stamps = dict(AgentMode.objects.values_list("key", "updated_at"))

    out, _ = run("catalog_import", str(tmp_path))

    assert out.count("unchanged: ") == 5 and "Imported: 0 new, 0 changed, 5 unchanged." in out
    assert dict(AgentMode.objects.values_list("key", "updated_at")) == stamps  # nothing was saved
    run("catalog_export", str(tmp_path))
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == first


def test_an_exported_file_reads_as_yaml_front_matter_and_the_prompt(tmp_path, team_a):
    general = AgentMode.objects.get(key="general")
    general.teams.set([team_a])
    run("catalog_export", str(tmp_path))
    text = (tmp_path / "general.mode.md").read_text()
    assert text.startswith("---\nkey: general\nname: General\ndescription: All-purpose assistance")
    keys = [line.split(":")[0] for line in text.split("---\n")[1].splitlines() if not line.startswith(" ")]
    assert keys == [
        "key",
        "name",
        "description",
        "summary",
        "default",
        "active",
        "order",
        "tools",
        "approvals",
        "roles",
        "examples",
        "tests",
        "checks",
        "teams",
    ]
    assert "teams:\n  - team-a\n---\n\n" + general.system_prompt + "\n" in text
    assert text.endswith(general.system_prompt + "\n")


def seed_export_edited(directory: Path) -> None:
    """The seed catalog exported, then data-analysis edited in an editor: its description, one sentence of
    its prompt and one more tool."""
    run("catalog_export", str(directory))
    path = directory / "data-analysis.mode.md"
    edit(path, "description: Answering questions", "description: Answering the team's questions")
    edit(path, "never guess names.", "never guess table or column names.")
    edit(path, "  - files_read\n", "  - files_read\n  - notes.list_notes\n")


def test_an_edited_export_imports_as_one_changed_mode_with_its_diff(tmp_path):
    before = catalog_snapshot()
    stamps = dict(AgentMode.objects.values_list("key", "updated_at"))
    seed_export_edited(tmp_path)

    out, err = run("catalog_import", str(tmp_path))

    assert err == ""
    assert "changed: data-analysis (data-analysis.mode.md)" in out
    for key in ("general", "ddr-authoring", "workflow-authoring"):
        assert f"unchanged: {key} ({key}.mode.md)" in out
    diff = [line[4:] for line in out.splitlines() if line.startswith("    ")]
    changed = [line for line in diff if line[:1] in "+-" and not line.startswith(("---", "+++"))]
    assert changed[0].startswith("-description: Answering questions")
    assert changed[1].startswith("+description: Answering the team's questions")
    assert any(line.startswith("+") and "never guess table or column names." in line for line in changed)
    assert "+  - notes.list_notes" in changed
    assert len(changed) == 5  # description, prompt (old and new) and the added tool
    assert "Imported: 0 new, 1 changed, 3 unchanged." in out
    assert "  data-analysis: changed, version 2 draft" in out

    # It lands as a draft: nothing live changed, for anyone.
    assert catalog_snapshot() == before
    assert dict(AgentMode.objects.values_list("key", "updated_at")) == stamps
    draft = ModeVersion.objects.get(mode__key="data-analysis", state=ModeVersion.State.DRAFT)
    assert draft.number == 2
    expected = before["data-analysis"]
    assert draft.snapshot["description"].startswith("Answering the team's questions")
    assert "never guess table or column names." in draft.snapshot["system_prompt"]
    assert draft.snapshot["tool_policy"] == [*expected["tool_policy"], "notes.list_notes"]
    untouched = set(draft.snapshot) - {"description", "system_prompt", "tool_policy", "teams"}
    assert {name: draft.snapshot[name] for name in untouched} == {name: expected[name] for name in untouched}
    event = CatalogEvent.objects.get(action=CatalogEvent.Action.IMPORTED)
    assert (event.mode_key, event.version, event.user) == ("data-analysis", 2, None)


def test_publish_makes_the_imported_version_live(tmp_path):
    before = catalog_snapshot()
    stamps = dict(AgentMode.objects.values_list("key", "updated_at"))
    seed_export_edited(tmp_path)

    out, _ = run("catalog_import", str(tmp_path), "--publish")

    assert "  data-analysis: changed, version 2 published" in out
    after = catalog_snapshot()
    analysis = after.pop("data-analysis")
    expected = before.pop("data-analysis")
    assert after == before
    assert analysis["description"].startswith("Answering the team's questions")
    assert "never guess table or column names." in analysis["system_prompt"]
    assert analysis["tool_policy"] == [*expected["tool_policy"], "notes.list_notes"]
    changed = {"description", "system_prompt", "tool_policy", "version"}
    assert {k: v for k, v in analysis.items() if k not in changed} == {
        k: v for k, v in expected.items() if k not in changed
    }
    assert analysis["version"] == 2
    new_stamps = dict(AgentMode.objects.values_list("key", "updated_at"))
    assert [key for key in stamps if stamps[key] != new_stamps[key]] == ["data-analysis"]


def test_publish_under_two_person_review_leaves_the_import_waiting_for_review(tmp_path, settings):
    settings.APTIX_CATALOG_REVIEW = "two-person"
    before = catalog_snapshot()
    seed_export_edited(tmp_path)

    out, _ = run("catalog_import", str(tmp_path), "--publish")

    assert "  data-analysis: changed, version 2 waiting for review" in out
    assert catalog_snapshot() == before
    assert ModeVersion.objects.get(mode__key="data-analysis", number=2).state == ModeVersion.State.PENDING


def test_dry_run_prints_the_changes_and_writes_nothing(tmp_path):
    before = catalog_snapshot()
    seed_export_edited(tmp_path)
    (tmp_path / "brand-new.mode.md").write_text("---\nkey: brand-new\nname: Brand new\ndescription: A new one\n---\n")

    out, _ = run("catalog_import", str(tmp_path), "--dry-run")

    assert "changed: data-analysis" in out and "new: brand-new (brand-new.mode.md)" in out
    assert "Dry run: 1 new, 1 changed, 3 unchanged; nothing was written." in out
    assert catalog_snapshot() == before


def test_one_bad_file_imports_nothing_at_all(tmp_path):
    before = catalog_snapshot()
    seed_export_edited(tmp_path)  # a good change …
    edit(tmp_path / "general.mode.md", "order: 10\n", "order: first\n")  # … and a bad one

    with pytest.raises(CommandError, match=r"1 problem\(s\) in the files: nothing was imported"):
        run("catalog_import", str(tmp_path))

    assert catalog_snapshot() == before


def test_a_bad_file_exits_non_zero_with_file_line_and_field_on_stderr(tmp_path, monkeypatch, capsys):
    run("catalog_export", str(tmp_path))
    edit(tmp_path / "general.mode.md", "order: 10\n", "order: first\n")
    line = (tmp_path / "general.mode.md").read_text().splitlines().index("order: first") + 1
    # run_from_argv closes the database connections when it ends; the test's transaction needs its own.
    monkeypatch.setattr("django.core.management.base.connections.close_all", lambda: None)

    with pytest.raises(SystemExit) as exited:
        catalog_import.Command().run_from_argv(["manage.py", "catalog_import", str(tmp_path)])

    assert exited.value.code == 1
    err = capsys.readouterr().err
    assert f"general.mode.md:{line}: order: expected a whole number, 0 or more" in err
    assert "nothing was imported" in err


def test_export_names_a_file_left_over_from_a_mode_that_no_longer_exists(tmp_path):
    (tmp_path / "retired.mode.md").write_text("---\nkey: retired\n---\n")
    out, err = run("catalog_export", str(tmp_path))
    assert "Wrote 4 mode files" in out
    assert err == "retired.mode.md: no such mode in the catalog (left as it is)\n"
    assert (tmp_path / "retired.mode.md").exists()


def test_a_teams_list_is_a_set_order_and_repeats_do_not_count(tmp_path, team_a, team_b):
    run("catalog_export", str(tmp_path))
    edit(tmp_path / "ddr-authoring.mode.md", "---\n\n", "teams:\n  - team-b\n  - team-a\n  - team-b\n---\n\n")
    assert "changed: ddr-authoring" in run("catalog_import", str(tmp_path), "--publish")[0]
    assert "unchanged: ddr-authoring" in run("catalog_import", str(tmp_path), "--publish")[0]


def test_an_empty_or_missing_directory_is_an_error(tmp_path):
    with pytest.raises(CommandError, match="No mode files found"):
        run("catalog_import", str(tmp_path))
    with pytest.raises(CommandError, match="no such directory"):
        run("catalog_import", str(tmp_path / "missing"))


def test_teams_in_a_file_set_the_modes_teams_and_leaving_them_out_means_every_team(tmp_path, team_a, team_b):
    run("catalog_export", str(tmp_path))
    edit(tmp_path / "ddr-authoring.mode.md", "---\n\n", "teams:\n  - team-b\n  - team-a\n---\n\n")
    run("catalog_import", str(tmp_path), "--publish")
    ddr = AgentMode.objects.get(key="ddr-authoring")
    assert sorted(ddr.teams.values_list("slug", flat=True)) == ["team-a", "team-b"]

    run("catalog_export", str(tmp_path))
    assert "teams:\n  - team-a\n  - team-b\n" in (tmp_path / "ddr-authoring.mode.md").read_text()
    edit(tmp_path / "ddr-authoring.mode.md", "teams:\n  - team-a\n  - team-b\n", "")
    run("catalog_import", str(tmp_path), "--publish")
    assert not ddr.teams.exists()
    assert Team.objects.count() == 2


VSCODE_AGENT = """---
name: Release Planner
description: 'Plans a release from the open issues'
tools: ['github/*', 'editFiles', 'search/codebase', 'sql/run_query']
model: Claude Sonnet 4 (copilot)
handoffs:
  - label: Start implementation
    agent: implementer
---
Plan the release.

List the risks.
"""

CLAUDE_SUBAGENT = """---
name: code-reviewer
description: Reviews code for quality and security.
tools: Read, Grep, Bash, mcp__github__get_issue, mcp__sql
model: sonnet
color: blue
---

You are a senior code reviewer.
"""


def test_vscode_and_claude_code_agents_are_imported_with_what_cannot_be_mapped_listed(tmp_path):
    (tmp_path / ".github" / "agents").mkdir(parents=True)
    (tmp_path / ".github" / "agents" / "planner.agent.md").write_text(VSCODE_AGENT)
    (tmp_path / ".claude" / "agents").mkdir(parents=True)
    (tmp_path / ".claude" / "agents" / "code-reviewer.md").write_text(CLAUDE_SUBAGENT)
    (tmp_path / "README.md").write_text("# Not an agent\n")

    out, err = run("catalog_import", str(tmp_path), "--publish")

    assert err == ""
    assert "new: release-planner (.github/agents/planner.agent.md)" in out
    assert "new: code-reviewer (.claude/agents/code-reviewer.md)" in out
    assert (
        ".github/agents/planner.agent.md: not mapped: tools editFiles, search/codebase: VS Code tools with no "
        "Aptix equivalent" in out
    )
    assert ".github/agents/planner.agent.md: not mapped: model 'Claude Sonnet 4 (copilot)'" in out
    assert ".github/agents/planner.agent.md: not mapped: handoffs: no Aptix equivalent" in out
    assert ".claude/agents/code-reviewer.md: not mapped: tools Read, Grep, Bash: Claude Code tools" in out
    assert ".claude/agents/code-reviewer.md: not mapped: color: no Aptix equivalent" in out
    planner = AgentMode.objects.get(key="release-planner")
    assert (planner.display_name, planner.description) == ("Release Planner", "Plans a release from the open issues")
    assert planner.tool_policy == ["github.*", "sql.run_query"]
    assert planner.system_prompt == "Plan the release.\n\nList the risks."
    assert (planner.is_active, planner.is_default, planner.model) == (True, False, "")
    reviewer = AgentMode.objects.get(key="code-reviewer")
    assert reviewer.display_name == "Code reviewer"
    assert reviewer.tool_policy == ["github.get_issue", "sql.*"]
    assert reviewer.system_prompt == "You are a senior code reviewer."


def test_a_vscode_agent_over_an_existing_mode_changes_only_what_it_says(tmp_path):
    before = catalog_snapshot()["general"]
    (tmp_path / "general.agent.md").write_text("---\nname: General\ndescription: Everyday help.\n---\nBe brief.\n")

    out, _ = run("catalog_import", str(tmp_path), "--publish")

    assert "changed: general (general.agent.md)" in out
    after = catalog_snapshot()["general"]
    assert (after["description"], after["system_prompt"], after["version"]) == ("Everyday help.", "Be brief.", 2)
    changed = {"description", "system_prompt", "version"}
    assert {k: v for k, v in after.items() if k not in changed} == {k: v for k, v in before.items() if k not in changed}


def test_a_claude_agents_directory_is_read_as_claude_code_subagents(tmp_path):
    agents = tmp_path / ".claude" / "agents"
    agents.mkdir(parents=True)
    (agents / "tester.md").write_text("---\nname: tester\ndescription: Writes tests.\n---\nWrite tests.\n")
    out, _ = run("catalog_import", str(agents), "--dry-run")
    assert "new: tester (tester.md)" in out
