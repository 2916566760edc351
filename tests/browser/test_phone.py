"""The workspace on a phone, 390×844 like an iPhone 14:
the session list is a drawer behind the top bar's "Sessions" button (aria-expanded, focus moved into
it and back, Esc or a tap beside it closes it), the composer stays at the bottom of the screen and its
Send button is never below the fold, on the home page and in a session with a long conversation.
Screenshots: var/test-artifacts/phone-*.png. The model is the built-in offline one."""

from __future__ import annotations

import pytest
from asgiref.sync import sync_to_async

from agents.sessions import session_create
from tests.helpers import async_db

from .axe import AXE_PAGE, violations
from .live import ARTIFACTS, expect, open_session, send, turn_ended, turns

pytestmark = [pytest.mark.asyncio(loop_scope="session"), async_db]

# Reduced motion: the drawer opens without sliding, so a screenshot shows it in place.
PHONE = {
    "viewport": {"width": 390, "height": 844},
    "is_mobile": True,
    "has_touch": True,
    "reduced_motion": "reduce",
    **AXE_PAGE,
}


async def _shot(page, name: str) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    await page.screenshot(path=str(ARTIFACTS / name))


async def on_screen(locator) -> None:
    """The element is visible and wholly inside the viewport, without scrolling the page."""
    await expect(locator).to_be_visible()
    box = await locator.bounding_box()
    viewport = locator.page.viewport_size
    assert box is not None
    assert box["y"] >= 0 and box["y"] + box["height"] <= viewport["height"], (box, viewport)
    assert box["x"] >= 0 and box["x"] + box["width"] <= viewport["width"], (box, viewport)
    assert await locator.page.evaluate("() => window.scrollY") == 0


async def test_the_session_list_is_a_drawer_behind_a_menu_button(sign_in, alice, team_a):
    await sync_to_async(session_create)(team=team_a, user=alice, mode="general", title="Supplier call")
    page = await sign_in(alice, **PHONE)
    toggle = page.get_by_role("button", name="Sessions")
    sidebar = page.locator("#sidebar")
    await expect(toggle).to_have_attribute("aria-expanded", "false")
    await expect(toggle).to_have_attribute("aria-controls", "sidebar")
    await expect(sidebar).to_be_hidden()  # closed: neither seen nor reachable with Tab
    await on_screen(page.get_by_role("button", name="Send"))
    await _shot(page, "phone-home.png")
    assert await violations(page) == []

    await toggle.click()
    await expect(toggle).to_have_attribute("aria-expanded", "true")
    await expect(sidebar).to_be_visible()
    await expect(sidebar.get_by_role("link", name="+ New session")).to_be_focused()
    await expect(sidebar).to_contain_text("Supplier call")
    await _shot(page, "phone-drawer-open.png")
    assert await violations(page) == []

    await page.keyboard.press("Escape")
    await expect(sidebar).to_be_hidden()
    await expect(toggle).to_have_attribute("aria-expanded", "false")
    await expect(toggle).to_be_focused()

    await toggle.click()
    await page.mouse.click(370, 400)  # on the shaded page beside the drawer
    await expect(sidebar).to_be_hidden()
    await expect(toggle).to_be_focused()

    await toggle.click()
    await page.locator("#message").focus()  # tabbing on into the page closes it
    await expect(sidebar).to_be_hidden()
    await expect(toggle).to_have_attribute("aria-expanded", "false")

    await toggle.click()
    await sidebar.get_by_role("searchbox", name="Filter sessions").fill("supp")
    await page.keyboard.press("Escape")  # clears the filter first (the browser's own Esc)...
    await expect(sidebar.get_by_role("searchbox", name="Filter sessions")).to_have_value("")
    await expect(sidebar).to_be_visible()
    await page.keyboard.press("Escape")  # ...then closes the drawer
    await expect(sidebar).to_be_hidden()

    await toggle.click()
    await sidebar.get_by_role("link", name="Supplier call").click()
    await expect(page.locator("h1")).to_have_text("Supplier call")
    await expect(page.locator("#sidebar")).to_be_hidden()  # a new page: the drawer is closed


async def test_the_composer_stays_at_the_bottom_of_a_long_conversation(sign_in, alice, team_a):
    session = await sync_to_async(session_create)(team=team_a, user=alice, mode="general", execution="ask")
    page = await sign_in(alice, **PHONE)
    await open_session(page, session.id)
    composer = page.locator("#composer")
    await on_screen(page.get_by_role("button", name="Send"))
    await expect(page.locator("#message")).to_be_focused()

    for index, text in enumerate(["Hello, who are you?", "Draw a bar chart of apples 3, pears 5", "What can you do?"]):
        await send(page, text)
        await turn_ended(turns(page).nth(index))
    timeline = page.locator("#timeline")
    assert await timeline.evaluate("t => t.scrollHeight > t.clientHeight"), (
        "the conversation should be longer than the screen"
    )

    box = await composer.bounding_box()
    assert box is not None and abs(box["y"] + box["height"] - 844) < 1, box  # flush with the bottom edge
    await on_screen(page.get_by_role("button", name="Send"))
    await _shot(page, "phone-session.png")
    assert await violations(page) == []

    await page.locator("#mode-badge").click()  # the popovers fit the screen too
    await expect(page.locator("#mode-popover")).to_be_visible()
    await on_screen(page.locator("#mode-popover h2"))
    await _shot(page, "phone-mode-popover.png")
