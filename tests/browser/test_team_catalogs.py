"""Team catalogs in a real browser, with the scripted model: a mode only for team B is nowhere in the
picker or the mode badge's catalog of alice, team A's owner; she sets team A's default mode under
Settings → Teams (HTMX, in place), and the next session she starts from the home composer starts in it.
Screenshot: var/test-artifacts/team-catalogs-settings.png."""

from __future__ import annotations

import re

import pytest
from asgiref.sync import sync_to_async

from agents.models import AgentSession
from modes.models import TeamDefaultMode
from tests.helpers import async_db
from tests.helpers.catalogs import B_ONLY, team_only_mode

from .live import ARTIFACTS, expect, open_session, scripted_env, session_id_of, turn_ended, turns

pytestmark = [pytest.mark.asyncio(loop_scope="session"), async_db]


@pytest.fixture(scope="module")
def daphne_env(switchboard) -> dict[str, str]:
    return scripted_env(switchboard)


@pytest.fixture
def b_only(db, team_b):
    """`await b_only()`: the mode only team B may use."""
    return sync_to_async(lambda: team_only_mode(team_b))


async def test_a_team_b_mode_is_absent_and_the_owners_team_default_starts_new_sessions(
    sign_in, alice, b_only, make_session, model
):
    await b_only()
    page = await sign_in(alice)
    picker = page.locator("#id_mode")
    await expect(picker.locator("option")).to_have_text(
        ["General", "DDR Authoring", "Workflow Authoring", "Data Analysis"]
    )
    await expect(picker).to_have_value("general")

    session = await make_session()
    await open_session(page, session.id)
    await page.locator("#mode-badge").click()
    catalog = page.locator("#mode-catalog")
    await expect(catalog).to_be_visible()
    await expect(catalog).to_contain_text("Data Analysis")
    await expect(catalog).not_to_contain_text("B Secrets")
    await page.keyboard.press("Escape")

    await page.goto("/settings/")
    row = page.locator("#team-default-team-a")
    await row.get_by_label("Default mode").select_option(label="Data Analysis")
    await row.get_by_role("button", name="Save").click()
    await expect(page.locator("#team-default-team-a [role=status]")).to_have_text(
        "Saved: new sessions of Team A start in Data Analysis."
    )
    await expect(page).to_have_url(re.compile(r"/settings/$"))  # swapped in place, no reload
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    await page.screenshot(path=str(ARTIFACTS / "team-catalogs-settings.png"), full_page=True, caret="initial")

    await page.goto("/")
    await expect(picker).to_have_value("data-analysis")
    model.reply("Ready for your numbers.")
    await page.fill("#message", "Revenue by month, please")
    await page.locator("#message").press("Enter")
    await expect(page).to_have_url(re.compile(r"/sessions/[0-9a-f]{32}/$"))
    await turn_ended(turns(page).first)
    await expect(page.locator("#mode-badge")).to_have_text("Data Analysis")
    started = await AgentSession.objects.aget(pk=session_id_of(page.url))
    assert started.mode == "data-analysis"


async def test_the_composer_of_a_member_of_two_teams_offers_the_chosen_teams_modes(sign_in, alice, team_b, b_only):
    from aptix.models import Membership

    mode = await b_only()
    await Membership.objects.acreate(team=team_b, user=alice)
    await TeamDefaultMode.objects.acreate(team=team_b, mode=mode)
    page = await sign_in(alice)
    picker = page.locator("#id_mode")
    await expect(picker).to_have_value("general")  # Team A, first by name
    await expect(picker.locator(f"option[value={B_ONLY}]")).to_be_hidden()
    await page.locator("#id_team").select_option(label="Team B")
    await expect(picker).to_have_value(B_ONLY)  # Team B's own default
    await page.locator("#id_team").select_option(label="Team A")
    await expect(picker).to_have_value("general")
    await expect(picker.locator(f"option[value={B_ONLY}]")).to_be_disabled()
