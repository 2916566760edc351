"""Projects in a real browser, with the scripted model: alice makes a project from the sidebar's
Projects link, starts a session from its page's New session (in the project's default mode), the
model receives the project's instructions, the sidebar shows the session under the project and the
project's page lists it. axe finds nothing on the project's page. A session that gets a new turn moves
to the top of its own group, not above the project's heading.
Screenshots: var/test-artifacts/projects-*.png."""

from __future__ import annotations

import re

import pytest
from asgiref.sync import sync_to_async

from agents.models import AgentSession
from agents.sessions import session_create
from projects.services import project_create
from tests.helpers import async_db

from .axe import AXE_PAGE, violations
from .live import ARTIFACTS, expect, open_session, scripted_env, turn_ended, turns

pytestmark = [pytest.mark.asyncio(loop_scope="session"), async_db]


@pytest.fixture(scope="module")
def daphne_env(switchboard) -> dict[str, str]:
    return scripted_env(switchboard)


async def shot(page, name: str) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    await page.screenshot(path=str(ARTIFACTS / f"projects-{name}.png"), full_page=True, caret="initial")


async def test_a_session_started_from_a_projects_page_runs_with_its_instructions(sign_in, alice, model):
    model.reply("Q3 revenue was 1.2 M€.")
    page = await sign_in(alice, **AXE_PAGE)
    await page.get_by_role("link", name="Projects").click()
    form = page.locator("#project-new-form")
    await form.get_by_label("Name").fill("Sales")
    await form.get_by_label("Instructions").fill("Answer in euros.")
    await form.get_by_label("Default mode").select_option(label="Data Analysis")
    await form.get_by_role("button", name="Make project").click()
    await expect(page.get_by_role("heading", name="Sales", level=1)).to_be_visible()
    await expect(page.locator("#no-project-sessions")).to_be_visible()

    await page.get_by_role("link", name="+ New session").last.click()
    await expect(page.get_by_role("heading", name="New session in Sales")).to_be_visible()
    await expect(page.locator("#id_mode")).to_have_value("data-analysis")
    await page.locator("#message").fill("Revenue in Q3?")
    await page.locator("#message").press("Enter")
    await turn_ended(turns(page).last)
    await expect(turns(page).last).to_contain_text("Q3 revenue was 1.2 M€.")
    assert "# Project instructions" in model.last_messages[0]["content"]
    assert "## Sales\nAnswer in euros." in model.last_messages[0]["content"]

    session = await sync_to_async(AgentSession.objects.select_related("project").get)()
    assert session.project.name == "Sales" and session.mode == "data-analysis"
    group = page.locator("#session-list .project-group")
    await expect(group).to_have_text("Project: Sales")
    await shot(page, "session")
    await group.get_by_role("link").click()
    await expect(page.locator("#project-sessions li")).to_have_count(1)
    await expect(page.locator("#project-sessions")).to_contain_text("Revenue in Q3?")
    assert await violations(page) == []
    await shot(page, "project")


async def test_a_session_with_a_new_turn_moves_to_the_top_of_its_own_project_group(sign_in, alice, team_a, model):
    def sessions():
        sales = project_create(team=team_a, user=alice, name="Sales")
        older = session_create(team=team_a, user=alice, project=sales, title="Older in Sales")
        session_create(team=team_a, user=alice, project=sales, title="Newer in Sales")
        session_create(team=team_a, user=alice, title="Loose")  # the most recent of all, in no project
        return older

    older = await sync_to_async(sessions)()
    model.reply("Done.")
    page = await sign_in(alice)
    await open_session(page, older.id)
    titles = page.locator("#session-list li")
    await expect(titles).to_have_text(
        [
            re.compile("Sales"),
            re.compile("Newer in Sales"),
            re.compile("Older in Sales"),
            "No project",
            re.compile("Loose"),
        ]
    )
    await page.locator("#message").fill("Once more")
    await page.locator("#message").press("Enter")
    await turn_ended(turns(page).last)
    await expect(titles).to_have_text(
        [
            re.compile("Sales"),
            re.compile("Older in Sales"),
            re.compile("Newer in Sales"),
            "No project",
            re.compile("Loose"),
        ]
    )
