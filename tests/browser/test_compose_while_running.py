"""Compose while a turn runs: the message box stays editable during a turn; Enter
then sends nothing and says why (nothing is queued silently); the draft survives the turn's end and
goes with the next Enter."""

from __future__ import annotations

import re

import pytest

from agents.models import Turn
from tests.helpers import async_db

from .live import expect, open_session, scripted_env, send, turn_ended, turns

pytestmark = [pytest.mark.asyncio(loop_scope="module"), async_db]


@pytest.fixture(scope="module")
def daphne_env(switchboard) -> dict[str, str]:
    return scripted_env(switchboard)


async def test_the_next_message_is_written_while_a_turn_runs_and_sent_after_it(sign_in, alice, make_session, model):
    model.reply(" ".join(f"w{i:03d}" for i in range(120)), chunk_delay=0.05)  # ~6 s of streaming
    model.reply("Second answer.")
    session = await make_session(mode="general", execution="ask")
    page = await sign_in(alice)
    await open_session(page, session.id)
    await send(page, "First question")
    await expect(turns(page).first).to_have_class(re.compile(r"\bstatus-running\b"))

    box = page.locator("#message")
    await expect(box).to_be_enabled()  # it used to be disabled for the whole turn
    await box.fill("Second question")
    await box.press("Enter")
    await expect(page.locator("#composer-error")).to_contain_text("A turn is running")
    await expect(page.locator("#composer button[type=submit]")).to_be_disabled()
    assert await Turn.objects.filter(session_id=session.id).acount() == 1  # nothing was queued

    await turn_ended(turns(page).first)
    await expect(box).to_have_value("Second question")  # the draft survived the composer's redraw
    await expect(page.locator("#composer-error")).to_be_empty()
    await box.press("Enter")
    await expect(turns(page)).to_have_count(2)
    await turn_ended(turns(page).nth(1))
    await expect(turns(page).nth(1)).to_contain_text("Second answer.")
