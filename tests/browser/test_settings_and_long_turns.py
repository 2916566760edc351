"""The settings page and long turns in a real browser: the chosen theme wins over the system's,
ticking the notification opt-in is what asks the browser's permission, and a running turn shows in
the tab's title and favicon, "✓ <session>" and a notification (for users who opted in) when it ends
while the tab is in the background."""

from __future__ import annotations

import pytest
from asgiref.sync import sync_to_async

from aptix.preferences import preferences_update
from tests.helpers import async_db

from .live import ARTIFACTS, expect, open_session, scripted_env, send, turn_ended, turns

pytestmark = [pytest.mark.asyncio(loop_scope="session"), async_db]

# The browser's side of "is the user looking?" and of notifications, under the test's control:
# window.__away hides and unfocuses the tab; notifications and permission requests are recorded.
TAB_PROBE = """
window.__away = false;
window.__notes = [];
window.__asked = 0;
Object.defineProperty(Document.prototype, "hidden", {get: function () { return window.__away; }, configurable: true});
Document.prototype.hasFocus = function () { return !window.__away; };
function FakeNotification(title, options) { window.__notes.push(title + " | " + ((options || {}).body || "")); }
FakeNotification.permission = "default";
FakeNotification.requestPermission = function () {
  window.__asked += 1;
  FakeNotification.permission = "granted";
  return Promise.resolve("granted");
};
window.Notification = FakeNotification;
"""
GRANTED = "window.Notification.permission = 'granted';"


@pytest.fixture(scope="module")
def daphne_env(switchboard) -> dict[str, str]:
    return scripted_env(switchboard)


def prefer(user, *, notify: bool):
    return sync_to_async(preferences_update)(
        user=user, default_mode="", default_execution="ask", theme="system", notify_turns=notify
    )


async def probed_page(sign_in, user, *, granted: bool):
    page = await sign_in(user)
    await page.context.add_init_script(TAB_PROBE + (GRANTED if granted else ""))
    return page


async def _shot(page, name: str) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    await page.screenshot(path=str(ARTIFACTS / name))


async def test_the_chosen_theme_wins_over_the_system_one(sign_in, alice):
    page = await sign_in(alice)  # a light system
    await page.get_by_role("link", name="Settings").click()
    await page.get_by_label("Dark").check()
    await page.get_by_role("button", name="Save preferences").click()
    await expect(page.locator(".message.success")).to_have_text("Your preferences were saved.")
    await expect(page.locator("html")).to_have_attribute("data-theme", "dark")
    await expect(page.locator("body")).to_have_css("background-color", "rgb(15, 18, 24)")
    await _shot(page, "settings-dark.png")

    dark_system = await sign_in(alice, color_scheme="dark")
    await dark_system.goto("/settings/")
    await dark_system.get_by_label("Light").check()
    await dark_system.get_by_role("button", name="Save preferences").click()
    await expect(dark_system.locator("body")).to_have_css("background-color", "rgb(246, 247, 249)")
    await _shot(dark_system, "settings-light-on-dark-system.png")


async def test_the_settings_page_focuses_nothing_on_load(sign_in, alice):
    """It put the caret in "Old password", as if the page were about changing the password."""
    page = await sign_in(alice)
    await page.goto("/settings/")
    await expect(page.get_by_role("button", name="Save preferences")).to_be_visible()
    await expect(page.get_by_label("Old password")).not_to_be_focused()
    assert await page.evaluate("() => document.activeElement === document.body")


async def test_opting_in_is_when_the_browser_is_asked(sign_in, alice):
    page = await probed_page(sign_in, alice, granted=False)
    await page.goto("/settings/")
    assert await page.evaluate("() => window.__asked") == 0  # never on its own
    await page.get_by_label("Notify me when a turn finishes").check()
    await page.wait_for_function("() => window.__asked === 1")
    await page.get_by_role("button", name="Save preferences").click()
    await expect(page.locator("body")).to_have_attribute("data-notify-turns", "1")


async def test_a_turn_that_ends_in_the_background_says_so(sign_in, alice, make_session, model):
    await prefer(alice, notify=True)
    model.reply(" ".join(f"w{i:03d}" for i in range(160)), chunk_delay=0.05)  # 8 s of streaming
    session = await make_session(mode="general", execution="ask", title="Quarterly report")
    page = await probed_page(sign_in, alice, granted=True)
    await open_session(page, session.id)
    favicon = page.locator("link#favicon")
    await expect(page).to_have_title("Quarterly report · Aptix")

    await send(page, "Write the long version")
    await expect(turns(page).first.locator(".live")).to_contain_text("w005")
    await expect(page).to_have_title("● Running — Quarterly report · Aptix")
    await expect(favicon).to_have_attribute("href", "/static/img/favicon-running.svg")
    await page.evaluate("() => { window.__away = true; }")  # the user switches to another tab

    await turn_ended(turns(page).first)
    await expect(page).to_have_title("✓ Quarterly report")
    await expect(favicon).to_have_attribute("href", "/static/img/favicon-done.svg")
    assert await page.evaluate("() => window.__notes") == ["✓ Quarterly report | The turn finished."]
    await _shot(page, "long-turn-done-in-background.png")

    await page.evaluate("() => { window.__away = false; window.dispatchEvent(new Event('focus')); }")
    await expect(page).to_have_title("Quarterly report · Aptix")
    await expect(favicon).to_have_attribute("href", "/static/img/favicon.svg")


async def test_no_notification_without_the_opt_in_or_while_watching(sign_in, alice, make_session, model):
    await prefer(alice, notify=False)
    model.reply(" ".join(f"w{i:03d}" for i in range(80)), chunk_delay=0.05)
    model.reply("Short.")
    session = await make_session(mode="general", execution="ask", title="Budget")
    page = await probed_page(sign_in, alice, granted=True)
    await open_session(page, session.id)

    await send(page, "First")
    await expect(page).to_have_title("● Running — Budget · Aptix")
    await turn_ended(turns(page).first)
    await expect(page).to_have_title("Budget · Aptix")  # watched: back to the plain title at once

    await send(page, "Second")
    await page.evaluate("() => { window.__away = true; }")
    await turn_ended(turns(page).nth(1))
    assert await page.evaluate("() => [window.__notes.length, window.__asked]") == [0, 0]
