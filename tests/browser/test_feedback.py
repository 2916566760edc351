"""Feedback on answers in Chromium: the Good answer / Bad answer buttons reached and pressed with the
keyboard, the reason form a Bad answer opens, the pressed state (aria-pressed); a live-rendered answer
carries the buttons once its turn ends, and the earlier answer's rating is then final. axe finds no
violation on the session page with the reason form open, nor on the admin's feedback page, in the
light and the dark theme (screenshots in var/test-artifacts/feedback-*.png).

The model is the built-in offline one."""

from __future__ import annotations

import pytest
from asgiref.sync import sync_to_async

from agents.feedback.services import ERROR_NOT_LATEST, feedback_set
from agents.models import AnswerFeedback
from tests.helpers import async_db

from .axe import AXE_PAGE, violations
from .live import ARTIFACTS, expect, open_session, send, turn_ended, turns

pytestmark = [pytest.mark.asyncio(loop_scope="session"), async_db]

THEMES = ["light", "dark"]


async def test_a_bad_answer_is_rated_with_the_keyboard_and_a_later_turn_makes_it_final(
    sign_in, alice, answered_session
):
    session = await answered_session("Rating", "The capital of France is **Paris**.", "Capital of France?")
    page = await sign_in(alice)
    await open_session(page, session.id)
    answer = turns(page).first
    good = answer.get_by_role("button", name="Good answer")
    bad = answer.get_by_role("button", name="Bad answer")
    await expect(good).to_have_attribute("aria-pressed", "false")

    # From the Copy button, one Shift+Tab back is Bad answer: the rating sits in the tab order.
    await answer.get_by_role("button", name="Copy the answer as Markdown").focus()
    await page.keyboard.press("Shift+Tab")
    await expect(bad).to_be_focused()
    await page.keyboard.press("Enter")
    await expect(bad).to_have_attribute("aria-pressed", "true")
    await expect(bad).to_be_focused()  # the block is redrawn, the focus stays on the button
    reasons = answer.get_by_role("group", name="What was wrong with this answer? (optional)")
    await expect(reasons).to_be_visible()
    await page.keyboard.press("Tab")  # into the reasons: the first one
    await expect(answer.get_by_role("radio", name="Wrong")).to_be_focused()
    await page.keyboard.press("ArrowDown")  # the next reason, chosen
    await expect(answer.get_by_role("radio", name="Unsafe")).to_be_checked()
    await page.keyboard.press("Tab")
    await page.keyboard.type("It told me to mix bleach.")
    await page.keyboard.press("Tab")
    await expect(answer.get_by_role("button", name="Send feedback")).to_be_focused()
    await page.keyboard.press("Enter")
    await expect(answer.get_by_role("status")).to_have_text(
        "Thanks for your feedback. You can change it until your next message."
    )
    await expect(reasons).to_have_count(0)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    # caret="initial": Playwright injects no style to hide the caret, which the CSP (on here) would refuse
    await page.screenshot(path=str(ARTIFACTS / "feedback-given-light.png"), caret="initial")
    row = await AnswerFeedback.objects.aget(turn__session=session)
    assert (row.rating, row.reason, row.comment) == ("down", "unsafe", "It told me to mix bleach.")

    # A new message: its answer, drawn by the live stream, has buttons of its own.
    await send(page, "Hello again")
    latest = turns(page).nth(1)
    await turn_ended(latest)
    latest_good = latest.get_by_role("button", name="Good answer")
    await expect(latest_good).to_have_attribute("aria-pressed", "false")
    await latest_good.click()
    await expect(latest_good).to_have_attribute("aria-pressed", "true")
    # The first answer's buttons were drawn before the new turn: pressing one now says why it is final.
    await good.click()
    await expect(answer.get_by_role("alert")).to_have_text(ERROR_NOT_LATEST)
    await expect(answer.get_by_role("button", name="Good answer")).to_have_count(0)
    await expect(answer).to_contain_text("You rated this answer: bad answer (unsafe)")
    assert (await AnswerFeedback.objects.aget(turn__session=session, turn__index=1)).rating == "down"
    await page.screenshot(path=str(ARTIFACTS / "feedback-final-light.png"), caret="initial")


@pytest.mark.parametrize("theme", THEMES)
async def test_the_pages_feedback_touches_pass_axe(sign_in, alice, curator, answered_session, theme):
    session = await answered_session("Rating", "Paris, on the Seine.", "Capital of France?")
    rated = await answered_session("Rated", "Berlin.", "Capital of Germany?")
    turn = await rated.turns.afirst()
    await sync_to_async(feedback_set)(turn=turn, user=alice, rating="down", reason="wrong", comment="It is Bonn?")
    ARTIFACTS.mkdir(parents=True, exist_ok=True)

    page = await sign_in(alice, color_scheme=theme, **AXE_PAGE)
    await open_session(page, session.id)
    await turns(page).first.get_by_role("button", name="Bad answer").click()
    await expect(page.get_by_role("button", name="Send feedback")).to_be_visible()
    await page.screenshot(path=str(ARTIFACTS / f"feedback-session-{theme}.png"))
    assert await violations(page) == []

    admin = await sign_in(curator, color_scheme=theme, **AXE_PAGE)
    await admin.goto("/admin/agents/answerfeedback/")
    await expect(admin.locator("#feedback-comments")).to_contain_text("It is Bonn?")
    await admin.screenshot(path=str(ARTIFACTS / f"feedback-admin-{theme}.png"), full_page=True)
    assert await violations(admin) == []
    await admin.get_by_role("link", name="The turn's trace").click()
    await expect(admin.locator("#content")).to_contain_text("Capital of Germany?")  # the rated turn, for a curator
