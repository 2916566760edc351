"""Usage and quotas in a real browser: from 80% of the team's monthly quota a notice under the
composer; past it, Send is refused with "<Team> has used its monthly quota of …; it resets on <date>"
under the composer and no turn appears; Settings → Usage and the admin's usage page (its SVG chart)
have no axe violation. Screenshots in var/test-artifacts/usage-*.png."""

from __future__ import annotations

import pytest
from asgiref.sync import sync_to_async

from agents.models import Turn
from agents.sessions import session_create
from tests.helpers import async_db
from usage.services import Charge, usage_charge

from .axe import AXE_PAGE, violations
from .live import ARTIFACTS, expect, open_session, turns

pytestmark = [pytest.mark.asyncio(loop_scope="session"), async_db]


def spend(team, user, tokens: int) -> None:
    usage_charge(Charge(team.pk, user.pk, "offline", "general", tokens, 0, None, True))


async def shot(page, name: str) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    await page.screenshot(path=str(ARTIFACTS / f"usage-{name}.png"), full_page=True)


async def test_the_quota_notice_and_refusal_under_the_composer(sign_in, alice, team_a):
    team_a.monthly_token_quota = 1000
    await team_a.asave()
    await sync_to_async(spend)(team_a, alice, 850)
    session = await sync_to_async(session_create)(team=team_a, user=alice, mode="general")
    page = await sign_in(alice, **AXE_PAGE)
    await open_session(page, session.id)
    await page.goto("/")  # Home says it too, under its composer
    await expect(page.locator("#quota-notice-1")).to_contain_text("85% of Team A's monthly quota of 1,000 tokens")
    await open_session(page, session.id)
    notice = page.locator("#quota-notice")
    await expect(notice).to_contain_text("85% of Team A's monthly quota of 1,000 tokens is used; it resets on")
    await shot(page, "notice")
    assert await violations(page) == []

    await sync_to_async(spend)(team_a, alice, 150)
    box = page.locator("#message")
    await box.fill("One more question")
    await box.press("Enter")
    error = page.locator("#composer-error")
    await expect(error).to_contain_text("Team A has used its monthly quota of 1,000 tokens; it resets on")
    await expect(box).to_have_value("One more question")  # the draft stays
    await expect(notice).to_be_hidden()  # the refusal shows once, not beside the notice
    await expect(page.get_by_text("monthly quota")).to_have_count(1)
    await expect(turns(page)).to_have_count(0)
    assert not await Turn.objects.aexists()
    await shot(page, "refused")
    assert await violations(page) == []


async def test_the_usage_pages_have_no_axe_violation(sign_in, alice, team_a, auditor):
    team_a.monthly_token_quota = 1000
    await team_a.asave()
    await sync_to_async(spend)(team_a, alice, 400)
    page = await sign_in(alice, **AXE_PAGE)
    await page.goto("/settings/")
    await page.get_by_role("link", name="Usage and cost").click()
    await expect(page.locator("#usage-table")).to_contain_text("400")
    await expect(page.locator(".quota-list")).to_contain_text("40% of Team A's monthly quota")
    await shot(page, "settings")
    assert await violations(page) == []

    admin = await sign_in(auditor, **AXE_PAGE)
    await admin.goto("/admin/usage/usageday/?group=user")
    await expect(admin.locator("svg.usage-chart")).to_be_visible()
    await expect(admin.locator("#usage-table")).to_contain_text("alice")
    await shot(admin, "admin")
    assert await violations(admin) == []
