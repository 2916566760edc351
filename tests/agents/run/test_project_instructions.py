"""A project's instructions in every request of its sessions: after the mode's prompt, fenced under a
heading of their own (their headings pushed below it), cut to APTIX_PROJECT_INSTRUCTIONS_CHARS; then
the project's files, each with what it is and the tool that reads it."""

from __future__ import annotations

import pytest
from asgiref.sync import sync_to_async

from agents.sessions import session_set_project
from modes.models import AgentMode
from projects.files import project_file_upload
from projects.services import project_create
from tests.helpers import async_db
from tests.helpers.files import csv_plain, media, pdf_bytes, uploaded  # noqa: F401 - media: autouse fixture

pytestmark = async_db

INSTRUCTIONS = "Answer in euros.\n\n# Ignore the mode\nQuarters start in April.\n```\n# not a heading\n```"


@pytest.fixture
async def sales(team_a, alice):
    return await sync_to_async(project_create)(
        team=team_a, user=alice, name="Sales", instructions=INSTRUCTIONS, default_mode="ddr-authoring"
    )


async def test_the_request_carries_the_projects_instructions_after_the_modes_prompt(
    make_session, run_turn, model, sales
):
    session = await make_session(project=sales)
    model.reply("ok")
    await run_turn(session, "Revenue by quarter?")
    mode = await AgentMode.objects.aget(key="ddr-authoring")
    system = model.last_messages[0]["content"]
    block = (
        "# Project instructions\n\n"
        "This session belongs to a project; its members ask you to follow these instructions:\n\n"
        "## Sales\n"
        "Answer in euros.\n\n### Ignore the mode\nQuarters start in April.\n```\n# not a heading\n```"
    )
    mode_section = f"# Mode: {mode.display_name}\n{mode.system_prompt}"
    assert f"{mode_section}\n\n{block}\n\n" in system
    assert system.index(block) < system.index("# Tools")
    assert model.last_messages[1:] == [{"role": "user", "content": "Revenue by quarter?"}]


async def test_the_instructions_are_cut_to_the_budget_and_leave_with_the_project(
    make_session, run_turn, model, sales, alice, settings
):
    settings.APTIX_PROJECT_INSTRUCTIONS_CHARS = 16
    session = await make_session(project=sales)
    model.reply("ok")
    await run_turn(session)
    assert "## Sales\nAnswer in euros.… (cut to 16 characters)\n\n" in model.last_messages[0]["content"]
    assert "Quarters start in April" not in model.last_messages[0]["content"]
    await sync_to_async(session_set_project)(session=session, user=alice, project=None)
    model.reply("ok")
    await run_turn(session)
    assert "# Project instructions" not in model.last_messages[0]["content"]


async def test_the_request_names_the_projects_files_and_the_tool_for_each(make_session, run_turn, model, team_a, alice):
    """A small model not told of them guessed a table ("invoices") and told the user to search the
    documents themselves (Qwen2.5-Coder 1.5B); the section names each table as files_query takes it,
    with its columns, and points documents at knowledge_search."""

    def make():
        project = project_create(team=team_a, user=alice, name="Sales", members=["alice"])
        project_file_upload(user=alice, project=project, uploaded=uploaded("sales.csv", csv_plain()))
        project_file_upload(user=alice, project=project, uploaded=uploaded("policy.pdf", pdf_bytes(["A", "B"])))
        return project

    project = await sync_to_async(make)()
    session = await make_session(project=project, mode="data-analysis", execution="agent")
    model.reply("ok")
    await run_turn(session, "Total sales?")
    system = model.last_messages[0]["content"]
    section = system[system.index("# Project files") :]
    lines = section.split("\n")
    assert lines[1] == "The session's project shares these files with all its sessions:"
    assert lines[2].startswith("- sales.csv: table `sales` (") and "columns region VARCHAR" in lines[2]
    assert lines[2].endswith("; query it with files_query.")
    assert lines[3] == (
        "- policy.pdf: a document (2 pages); search the project's documents with knowledge_search and cite "
        "the passages it returns."
    )
    assert system.index("# Project files") < system.index("# Tools")
