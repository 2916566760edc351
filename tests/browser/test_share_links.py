"""Share links in a real browser, with public links turned on (APTIX_PUBLIC_LINKS=true): alice makes a
public link from the session menu and sees its address once under Settings → Shared; a signed-out
visitor reads the snapshot (no composer, no sidebar, `noindex`) until alice revokes it, then is told
the link shows nothing (410). A team link: a signed-out teammate signs in and lands back on it, a
member of another team gets the 404 page. axe finds nothing on the menu, Settings → Shared, the link's
page (light and dark) and the ended link's page; the other steps keep the Content-Security-Policy and
fail on any violation. Screenshots: var/test-artifacts/share-links-*.png."""

from __future__ import annotations

import re

import pytest

from tests.helpers import async_db

from .axe import AXE_PAGE, violations
from .live import ARTIFACTS, expect, open_session, turns

pytestmark = [pytest.mark.asyncio(loop_scope="session"), async_db]

ANSWER = "Revenue was up 4%."


@pytest.fixture(scope="module")
def daphne_env() -> dict[str, str]:
    return {"APTIX_PUBLIC_LINKS": "true"}


async def shot(page, name: str) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    await page.screenshot(path=str(ARTIFACTS / f"share-links-{name}.png"), full_page=True, caret="initial")


async def make_link(page, session_id: str, *, public: bool, audit: bool = False) -> str:
    """Make a link from the session menu; its address, as Settings → Shared shows it once."""
    await open_session(page, session_id)
    await page.get_by_role("button", name="Session actions").click()
    await page.locator("#share-links summary").click()
    form = page.locator("#share-link-form")
    if public:
        await form.get_by_label("Anyone with the link, without signing in").check()
    await form.get_by_label("Works for").select_option("30")
    if audit:
        assert await violations(page) == []
        await shot(page, "menu")
    await form.get_by_role("button", name="Make a read-only link").click()
    await expect(page).to_have_url(re.compile(r"/settings/shared/#new-link$"))
    await expect(page.locator("#new-link")).to_contain_text("copy it now, it will not be shown again")
    return (await page.locator("#new-link-url").inner_text()).strip()


async def test_a_public_link_is_read_signed_out_until_its_author_revokes_it(
    sign_in, open_page, alice, answered_session
):
    session = await answered_session("Q3 summary", ANSWER, "How did Q3 go?")
    author = await sign_in(alice, **AXE_PAGE)
    url = await make_link(author, session.id, public=True, audit=True)
    assert re.fullmatch(r"http://[^/]+/s/[A-Za-z0-9_-]{43}/", url)
    row = author.locator("#links-table tbody tr")
    await expect(row).to_have_count(1)
    await expect(row).to_contain_text("Q3 summary")
    await expect(row).to_contain_text("Public")
    assert await violations(author) == []
    await shot(author, "settings-shared")
    await author.reload()
    await expect(author.locator("#new-link")).to_have_count(0)  # shown once

    visitor = await open_page(**AXE_PAGE)
    response = await visitor.goto(url)
    assert response is not None and response.status == 200
    assert response.headers["x-robots-tag"] == "noindex, nofollow"
    await expect(visitor.locator('meta[name="robots"]')).to_have_attribute("content", "noindex, nofollow")
    await expect(visitor.locator("#session-title")).to_have_text("Q3 summary")
    await expect(turns(visitor)).to_have_count(1)
    await expect(turns(visitor).first).to_contain_text(ANSWER)
    await expect(visitor.locator("#message")).to_have_count(0)  # no composer
    await expect(visitor.locator("#sidebar")).to_have_count(0)  # no other sessions
    await expect(visitor.locator("main button")).to_have_count(0)  # nothing that acts
    assert await violations(visitor) == []
    await shot(visitor, "public-page")
    dark = await open_page(color_scheme="dark", **AXE_PAGE)
    await dark.goto(url)
    await expect(turns(dark).first).to_contain_text(ANSWER)
    assert await violations(dark) == []
    await shot(dark, "public-page-dark")

    await author.get_by_role("button", name=re.compile("Revoke the link to Q3 summary")).click()
    await expect(author.locator(".messages")).to_contain_text("The link was revoked")
    await expect(author.locator("#no-links")).to_be_visible()
    gone = await visitor.goto(url)
    assert gone is not None and gone.status == 410
    await expect(visitor.locator("#link-refused")).to_contain_text("revoked by its author")
    await expect(visitor.locator("body")).not_to_contain_text(ANSWER)
    assert await violations(visitor) == []
    await shot(visitor, "revoked")


async def test_a_team_link_asks_a_signed_out_teammate_to_sign_in_and_refuses_another_team(
    sign_in, open_page, alice, bob, carol, password, answered_session
):
    session = await answered_session("Hiring plan", "Two engineers in Q4.", "What is the hiring plan?")
    author = await sign_in(alice)
    url = await make_link(author, session.id, public=False)

    teammate = await open_page()
    await teammate.goto(url)
    await expect(teammate).to_have_url(re.compile(r"/login/\?next=/s/"))
    await teammate.fill("#id_username", bob.username)
    await teammate.fill("#id_password", password)
    await teammate.click("form button[type=submit]")
    await expect(teammate).to_have_url(url)  # back on the link, signed in
    await expect(turns(teammate).first).to_contain_text("Two engineers in Q4.")
    await expect(teammate.locator(".snapshot-head")).to_contain_text("shared by alice")
    await shot(teammate, "team-page")

    outsider = await sign_in(carol)
    refused = await outsider.goto(url)
    assert refused is not None and refused.status == 404
    await expect(outsider.get_by_role("heading", name="Not found")).to_be_visible()
    await expect(outsider.locator("body")).not_to_contain_text("Two engineers")
