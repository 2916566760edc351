"""A curator's draft in Chromium, with the scripted model: saved as a draft on the mode's admin page
(nothing live changes), tried in a session of the curator's own that is labelled "draft v2" and runs
on the draft's prompt, then published; the next turn runs with the published version 2.
Screenshots: var/test-artifacts/catalog-versions-*.png."""

from __future__ import annotations

import pytest

from agents.models import Turn
from modes.models import AgentMode
from tests.helpers import async_db

from .live import ARTIFACTS, expect, scripted_env, send, session_id_of, stream_open, turn_ended, turns

pytestmark = [pytest.mark.asyncio(loop_scope="session"), async_db]

DRAFT_PROMPT = "Answer like a ship's captain, in one sentence."


@pytest.fixture(scope="module")
def daphne_env(switchboard) -> dict[str, str]:
    return scripted_env(switchboard)


@pytest.fixture
def curator_in_team(db, curator, team_a):
    team_a.memberships.create(user=curator)
    return curator


async def shot(page, name: str) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    await page.screenshot(path=str(ARTIFACTS / f"catalog-versions-{name}.png"), full_page=True, caret="initial")


async def test_a_curator_drafts_tries_and_publishes_a_mode(sign_in, curator_in_team, model):
    general = await AgentMode.objects.aget(key="general")
    page = await sign_in(curator_in_team)
    await page.goto(f"/admin/modes/agentmode/{general.pk}/change/")
    await page.locator("#id_system_prompt").fill(DRAFT_PROMPT)
    await page.locator("#id_change_note").fill("A captain's voice")
    await page.get_by_role("button", name="Save as draft").click()
    await expect(page.get_by_text("Saved as draft version 2")).to_be_visible()
    draft_row = page.locator('tr.mode-version[data-version="2"]')
    await expect(draft_row).to_contain_text("Draft")
    await expect(draft_row).to_contain_text("A captain's voice")
    assert (await AgentMode.objects.aget(key="general")).system_prompt != DRAFT_PROMPT  # nothing live changed
    await shot(page, "draft")

    await draft_row.get_by_role("button", name="Try it").click()
    await expect(page.locator("#mode-badge")).to_contain_text("draft v2")
    await stream_open(page)
    session_id = session_id_of(page.url)
    model.reply("Aye, the course is set.")
    await send(page, "Where are we heading?")
    await turn_ended(turns(page).last)
    await expect(turns(page).last).to_contain_text("Aye, the course is set.")
    assert DRAFT_PROMPT in model.last_messages[0]["content"]  # the draft's prompt, in the curator's session
    tried = await Turn.objects.filter(session_id=session_id).order_by("created_at").alast()
    assert (tried.trace["mode_version"], tried.trace.get("mode_draft")) == (2, True)
    await shot(page, "try")

    await page.goto(f"/admin/modes/agentmode/{general.pk}/change/")
    await page.locator('tr.mode-version[data-version="2"]').get_by_role("button", name="Publish").click()
    await expect(page.get_by_text("Version 2 is published.")).to_be_visible()
    await expect(page.locator('tr.mode-version[data-version="2"]')).to_contain_text("Published")
    assert (await AgentMode.objects.aget(key="general")).version == 2

    await page.goto(f"/sessions/{session_id}/")
    await stream_open(page)
    await expect(page.locator("#mode-badge")).not_to_contain_text("draft")  # published: a plain session now
    model.reply("Full sail ahead.")
    await send(page, "And now?")
    await expect(turns(page)).to_have_count(2)
    await turn_ended(turns(page).last)
    latest = await Turn.objects.filter(session_id=session_id).order_by("created_at").alast()
    assert (latest.trace["mode_version"], latest.trace.get("mode_draft")) == (2, None)
    assert DRAFT_PROMPT in model.last_messages[0]["content"]
    await shot(page, "published")
