"""Signing in with the company's identity provider in Chromium, against the real test provider process
(tests/oidc_provider/): the login page's "Sign in with Test IdP" (screenshot, axe finds no violation,
light and dark), one click to the provider's login form, back in the workspace of the team the user's
group maps to, and Log out ending the provider's session too. The Content-Security-Policy stays on
(form-action lets the forms continue to the provider): open_page fails the test on any violation."""

from __future__ import annotations

import asyncio
import re

import pytest
from asgiref.sync import sync_to_async
from django.contrib.auth import get_user_model

from aptix.models import Membership, Team
from identity.models import ExternalIdentity, GroupRule
from tests.helpers import async_db
from tests.helpers.oidc import PASSWORD

from .axe import AXE_PAGE, violations
from .live import ARTIFACTS, expect

pytestmark = [pytest.mark.asyncio(loop_scope="session"), async_db]


@pytest.fixture(scope="module")
def daphne_env(oidc_provider) -> dict[str, str]:
    return oidc_provider.aptix_env()


@pytest.mark.parametrize("theme", ["light", "dark"])
async def test_the_login_page_offers_the_provider(open_page, theme):
    page = await open_page(color_scheme=theme, **AXE_PAGE)
    await page.goto("/login/")
    await expect(page.get_by_role("button", name="Sign in with Test IdP")).to_be_visible()
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    await page.screenshot(path=str(ARTIFACTS / f"sign-in-provider-login-{theme}.png"))
    assert await violations(page) == []


async def provider_login(page, username: str) -> None:
    await expect(page.get_by_role("heading", name="Test provider")).to_be_visible()
    await page.fill("#id_username", username)
    await page.fill("#id_password", PASSWORD)
    await page.click("text=Sign in at the provider")


async def test_the_whole_sign_in_and_sign_out(open_page, oidc_provider):
    team = await sync_to_async(Team.objects.create)(name="Data", slug="data")
    await sync_to_async(GroupRule.objects.create)(claim_value="data-team", team=team, role=Membership.Role.OWNER)
    await asyncio.to_thread(
        oidc_provider.user, "yara", groups=["data-team"], first_name="Yara", email="yara@example.com"
    )

    page = await open_page()
    await page.goto("/login/")
    await page.get_by_role("button", name="Sign in with Test IdP").click()
    await expect(page).to_have_url(re.compile(r"/accounts/login/"))  # at the provider
    await provider_login(page, "yara")
    await expect(page).to_have_url(re.compile(r"127\.0\.0\.1:\d+/$"))
    await expect(page.get_by_role("heading", name="New session")).to_be_visible()
    await expect(page.locator(".topnav")).to_contain_text("yara")

    user = await sync_to_async(get_user_model().objects.get)(username="yara")
    assert await sync_to_async(ExternalIdentity.objects.filter(user=user, issuer=oidc_provider.issuer).exists)()
    role = await sync_to_async(lambda: Membership.objects.get(user=user, team=team).role)()
    assert role == Membership.Role.OWNER

    await page.get_by_role("button", name="Log out").click()
    await expect(page).to_have_url(re.compile(r"/login/$"))  # the provider sent the browser back
    await expect(page.get_by_role("button", name="Sign in with Test IdP")).to_be_visible()
    # The provider's session ended too: signing in again asks for the password at the provider.
    await page.get_by_role("button", name="Sign in with Test IdP").click()
    await expect(page.get_by_role("heading", name="Test provider")).to_be_visible()


async def test_a_user_without_a_mapped_group_sees_the_page_saying_so(open_page, oidc_provider):
    await asyncio.to_thread(oidc_provider.user, "zed", groups=["unmapped"])
    page = await open_page(**AXE_PAGE)
    await page.goto("/login/")
    await page.get_by_role("button", name="Sign in with Test IdP").click()
    await provider_login(page, "zed")
    await expect(page.get_by_role("heading", name="No team yet")).to_be_visible()
    assert await violations(page) == []
