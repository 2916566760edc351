"""A project's files in a real browser, with the built-in offline model: a CSV uploaded on the
project's page (htmx: the Files card comes back listing it, with its table), then a new session from
the project's page answers a question about it from the project's table; the page stays free of axe
violations. Screenshot: var/test-artifacts/project-files.png."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from asgiref.sync import sync_to_async

from projects.services import project_create
from tests.helpers import async_db

from .axe import AXE_PAGE, violations
from .live import ARTIFACTS, expect, send, turn_ended, turns

pytestmark = [pytest.mark.asyncio(loop_scope="session"), async_db]
SAMPLES = Path(__file__).resolve().parents[2] / "aptix" / "demo_data"


async def test_a_csv_uploaded_to_the_project_answers_in_a_new_session(sign_in, alice, team_a):
    project = await sync_to_async(project_create)(team=team_a, user=alice, name="Sales", default_mode="data-analysis")
    page = await sign_in(alice, **AXE_PAGE)
    await page.goto(f"/projects/{project.id}/")
    await page.wait_for_load_state("load")
    await expect(page.locator("#no-project-files")).to_be_visible()
    await page.locator("#project-file-input").set_input_files(str(SAMPLES / "quarterly_sales.csv"))
    await page.locator("#project-file-form").get_by_role("button", name="Upload", exact=True).click()
    listed = page.locator("#project-file-list li")
    await expect(listed).to_have_count(1)
    await expect(listed).to_contain_text("quarterly_sales.csv")
    await expect(listed.locator("code")).to_have_text("quarterly_sales")
    await expect(page.locator("#project-file-done")).to_contain_text("was added to the project")
    assert await violations(page) == []
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    await page.screenshot(path=str(ARTIFACTS / "project-files.png"), full_page=True, caret="initial")

    await page.get_by_role("link", name="+ New session").last.click()
    await expect(page.get_by_role("heading", name="New session in Sales")).to_be_visible()
    await page.locator("#new-session").get_by_text("Agent", exact=True).click()
    await send(page, "What is the total revenue?")
    await expect(page).to_have_url(re.compile(r"/sessions/[0-9a-f]{32}/$"))
    turn = turns(page).first
    await turn_ended(turn)
    await expect(turn.locator(".answer")).to_contain_text("The total revenue is 1581500")
    await expect(turn.locator(".tool-card .tool-name")).to_contain_text(["files_list", "files_query"])
