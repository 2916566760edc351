"""Composer-first and edit/retry/regenerate in a real browser, against a
scripted model. Screenshots of the key states go to var/test-artifacts/ (resend-*.png)."""

from __future__ import annotations

import re

import pytest

from agents.models import AgentSession, Turn
from tests.helpers import async_db

from .live import ARTIFACTS, expect, open_session, scripted_env, send, session_id_of, turn_ended, turns

pytestmark = [pytest.mark.asyncio(loop_scope="session"), async_db]


@pytest.fixture(scope="module")
def daphne_env(switchboard) -> dict[str, str]:
    return scripted_env(switchboard)


def current(page):
    """The turns of the conversation (an earlier version shown is drawn inside one of them)."""
    return page.locator("#timeline > article.turn")


async def screenshot(page, name: str) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    # caret="initial": hiding the caret would inject a style, which the Content-Security-Policy refuses
    await page.screenshot(path=str(ARTIFACTS / f"resend-{name}.png"), caret="initial")


async def test_the_home_composer_sends_the_first_message_and_refuses_an_empty_one(sign_in, alice, model):
    page = await sign_in(alice)
    await expect(page.locator("#message")).to_be_focused()
    await page.select_option("#id_mode", "data-analysis")
    await page.locator("#new-session .segmented span", has_text="Agent").click()
    await screenshot(page, "home-composer")

    await page.fill("#message", "   ")  # only blanks: the browser lets it through, the server refuses it
    await page.locator("#new-session button[type=submit]").click()
    await expect(page.locator("#composer-error")).to_contain_text("The message is empty.")
    await expect(page).to_have_url(re.compile(r"/sessions/new/$"))
    assert await AgentSession.objects.acount() == 0

    model.reply("Revenue grew every month.")
    await page.fill("#message", "How did revenue develop?")
    await page.locator("#message").press("Enter")
    await expect(page).to_have_url(re.compile(r"/sessions/[0-9a-f]{32}/$"))
    session = await AgentSession.objects.aget(pk=session_id_of(page.url))
    assert (session.mode, session.execution) == ("data-analysis", "agent")
    await turn_ended(turns(page).first)
    await expect(turns(page).first.locator(".answer")).to_have_text("Revenue grew every month.")
    await expect(page.locator("#session-list")).to_contain_text("How did revenue develop?")


async def test_edit_an_earlier_message_and_resend(sign_in, alice, make_session, model):
    session = await make_session(mode="general", execution="ask")
    page = await sign_in(alice)
    await open_session(page, session.id)
    model.reply("Answer one.")
    await send(page, "Question one")
    await turn_ended(turns(page).first)
    model.reply("Answer two.")
    await send(page, "Question two")
    await turn_ended(turns(page).nth(1))

    first = turns(page).first
    await first.locator(".edit-message summary").click()
    await first.locator(".edit-message textarea").fill("Question one, rephrased")
    await screenshot(page, "edit-open")
    model.reply("Answer to the rephrased one.")
    await first.get_by_role("button", name="Send edited message").click()

    newest = current(page).first  # both turns are its first version now, off the timeline
    await expect(newest.locator(".msg-user .versions")).to_contain_text("Version 2 of 2")
    await expect(current(page)).to_have_count(1)
    await turn_ended(newest)
    await expect(newest.locator(".msg-user .bubble")).to_have_text("Question one, rephrased")
    await expect(newest.locator(".msg-user .meta")).to_contain_text("edited")
    await expect(newest.locator(".answer")).to_have_text("Answer to the rephrased one.")
    assert [m["content"] for m in model.last_messages if m["role"] == "user"] == ["Question one, rephrased"]
    await screenshot(page, "edited")

    await page.reload()  # the page draws the same from the database
    await expect(current(page)).to_have_count(1)
    await expect(current(page).first.locator(".versions")).to_contain_text("Version 2 of 2")


async def test_switch_between_the_versions_of_a_message(sign_in, alice, make_session, model):
    session = await make_session(mode="general", execution="ask")
    page = await sign_in(alice)
    await open_session(page, session.id)
    model.reply("Answer one.")
    await send(page, "Question one")
    await turn_ended(turns(page).first)
    model.reply("Answer two.")
    await send(page, "Question two")
    await turn_ended(turns(page).nth(1))
    model.reply("Answer two, again.")
    await turns(page).nth(1).get_by_role("button", name="Regenerate").click()
    newest = current(page).nth(1)
    await expect(newest.locator(".versions")).to_contain_text("Version 2 of 2")
    await turn_ended(newest)
    await expect(newest.get_by_role("button", name="Next version")).to_be_disabled()

    await newest.get_by_role("button", name="Show version 1 of 2").click()  # in place, no reload
    shown = newest.locator(".turn-version")
    await expect(shown.locator(".version-note")).to_contain_text("Version 1 of 2: replaced by a regenerated answer")
    await expect(shown.locator(".answer")).to_have_text("Answer two.")
    await expect(newest.locator(":scope > .turn-body")).to_be_hidden()
    await expect(shown.get_by_role("button", name="Previous version")).to_be_disabled()
    await expect(shown.get_by_role("button", name="Show version 2 of 2")).to_be_focused()  # kept on the switcher
    await screenshot(page, "version-1")

    # the conversation goes on from the newest version, whichever is shown
    model.reply("Answer three.")
    await send(page, "Question three")
    await turn_ended(current(page).nth(2))
    await expect(current(page).nth(2).locator(".answer")).to_have_text("Answer three.")
    answers = [m["content"] for m in model.last_messages if m["role"] == "assistant"]
    assert answers == ["Answer one.", "Answer two, again."]
    await expect(shown.locator(".answer")).to_have_text("Answer two.")  # still showing what was chosen

    await shown.get_by_role("button", name="Show version 2 of 2").focus()
    await page.keyboard.press("Enter")  # by keyboard, back to the newest
    await expect(shown).to_be_empty()
    await expect(newest.locator(".turn-body .answer")).to_have_text("Answer two, again.")
    await expect(newest.get_by_role("button", name="Show version 1 of 2")).to_be_focused()
    await screenshot(page, "version-2")


async def test_retry_a_failed_turn_then_regenerate_the_answer(sign_in, alice, make_session, model):
    session = await make_session(mode="general", execution="ask")
    page = await sign_in(alice)
    await open_session(page, session.id)
    model.error(500, "The model server fell over.")
    await send(page, "Summarise our week")
    failed = turns(page).first
    await turn_ended(failed, "failed")
    await expect(failed.get_by_role("button", name="Regenerate")).to_have_count(0)
    await screenshot(page, "failed")

    model.reply("A calm week.")
    await failed.get_by_role("button", name="Retry").click()
    retried = current(page).first
    await turn_ended(retried)
    await expect(retried.locator(".answer")).to_have_text("A calm week.")
    await expect(current(page)).to_have_count(1)
    await expect(retried.locator(".msg-user .meta")).to_contain_text("retried")
    await expect(retried.locator(".versions")).to_contain_text("Version 2 of 2")

    model.reply("A quiet, productive week.")
    await retried.get_by_role("button", name="Regenerate").click()
    regenerated = current(page).first
    await turn_ended(regenerated)
    await expect(regenerated.locator(".answer")).to_have_text("A quiet, productive week.")
    await expect(current(page)).to_have_count(1)
    await expect(regenerated.locator(".versions")).to_contain_text("Version 3 of 3")
    await expect(page.get_by_role("button", name="Regenerate")).to_have_count(1)  # only the last answer's
    await screenshot(page, "regenerated")
    rows = [(t.origin, t.status, bool(t.replaced_by_id)) async for t in Turn.objects.filter(session=session)]
    assert rows == [("message", "failed", True), ("retry", "completed", True), ("regenerate", "completed", False)]


async def test_another_tab_shows_the_new_version_in_place_of_the_old(sign_in, alice, make_session, model):
    session = await make_session(mode="general", execution="ask")
    page = await sign_in(alice)
    await open_session(page, session.id)
    model.reply("First answer.")
    await send(page, "Tell me something")
    await turn_ended(turns(page).first)

    other = await page.context.new_page()  # the same user, a second tab on the same session
    await open_session(other, session.id)
    await expect(turns(other)).to_have_count(1)

    model.reply("Second answer.")
    await turns(page).first.get_by_role("button", name="Regenerate").click()
    await expect(current(page).first.locator(".versions")).to_contain_text("Version 2 of 2")
    await turn_ended(current(page).first)
    # the other tab hears of it through the stream: the old turn gone, the new one its second version
    await expect(current(other)).to_have_count(1)
    await expect(current(other).first.locator(".versions")).to_contain_text("Version 2 of 2")
    await turn_ended(current(other).first)
    await expect(current(other).first.locator(".answer")).to_have_text("Second answer.")
    await other.close()
