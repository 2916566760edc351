"""Compose while a turn runs: the message box stays editable during a turn; Enter
then sends nothing and says why (nothing is queued silently); the draft survives the turn's end and
goes with the next Enter."""

from __future__ import annotations

import asyncio
import re

import pytest

from agents.models import Turn
from tests.helpers import async_db

from .live import expect, open_session, open_session_stream_held, scripted_env, send, turn_ended, turns

pytestmark = [pytest.mark.asyncio(loop_scope="session"), async_db]


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


async def test_a_refusal_in_a_second_tab_keeps_its_reason_until_the_next_send(sign_in, alice, make_session, model):
    """The second tab did not know yet that a turn runs (its stream had not told it): the server refused
    the message with its reason, which the stream's redraw of the composer wiped a moment later,
    leaving the draft there unexplained."""
    model.reply(" ".join(f"w{i:03d}" for i in range(60)), chunk_delay=0.05)  # ~3 s of streaming
    model.reply("Second answer.")
    session = await make_session(mode="general", execution="ask")
    first = await sign_in(alice)
    await open_session(first, session.id)
    second = await sign_in(alice)
    stream = asyncio.Event()
    await open_session_stream_held(second, session.id, stream)

    await send(first, "First question")
    await expect(turns(first).first).to_have_class(re.compile(r"\bstatus-running\b"))
    await send(second, "Second question")
    error = second.locator("#composer-error")
    await expect(error).to_contain_text("A turn is still running")
    stream.set()  # the stream now draws the running turn and its busy composer, then its end
    await expect(turns(second).first).to_have_class(re.compile(r"\bstatus-running\b"))
    await turn_ended(turns(second).first)
    await expect(error).to_contain_text("A turn is still running")
    await expect(second.locator("#message")).to_have_value("Second question")

    await second.locator("#message").press("Enter")  # the next send clears it
    await turn_ended(turns(second).nth(1))
    await expect(error).to_be_empty()
