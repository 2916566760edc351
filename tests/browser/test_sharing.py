"""A session shared with the team, in a real browser: its author shares it from the ⋯ menu, a teammate
finds it under "Shared with me", reads it with no composer or buttons while the author's turn streams
into their page live, and loses it at once when the author stops sharing; "Continue as my copy" opens
the teammate's own session."""

from __future__ import annotations

import os
import re

import pytest

from tests.helpers import async_db

from .live import expect, open_session, scripted_env, send, stream_open, turn_ended, turns

pytestmark = [pytest.mark.asyncio(loop_scope="session"), async_db]
SCREENS = os.environ.get("APTIX_SHARING_SCREENS")  # a directory: screenshots of each step, to look at


@pytest.fixture(scope="module")
def daphne_env(switchboard) -> dict[str, str]:
    return scripted_env(switchboard)


async def _shot(page, name: str) -> None:
    if SCREENS:
        await page.screenshot(path=f"{SCREENS}/{name}.png", caret="initial")  # hiding it injects a style: CSP


async def test_a_teammate_reads_a_shared_session_live_and_loses_it_when_unshared(
    sign_in, alice, bob, make_session, model
):
    session = await make_session(title="Quarterly numbers", mode="general", execution="ask")
    author = await sign_in(alice)
    await open_session(author, session.id)
    await author.get_by_role("button", name="Session actions").click()
    await expect(author.get_by_role("button", name="Share with Team A")).to_be_visible()
    await _shot(author, "1-owner-menu")
    await author.get_by_role("button", name="Share with Team A").click()
    await expect(author.locator(".messages")).to_contain_text("Shared with Team A")
    await stream_open(author)
    await _shot(author, "1b-owner-shared")

    reader = await sign_in(bob)
    shared = reader.locator(".shared-sessions")
    await expect(shared).to_contain_text("Quarterly numbers")
    await expect(shared).to_contain_text("alice")
    await shared.get_by_role("link", name=re.compile("Quarterly numbers")).click()
    await stream_open(reader)
    await expect(reader.locator("#message")).to_have_count(0)  # no composer
    await expect(reader.get_by_role("button", name="Session actions")).to_have_count(0)
    await expect(reader.get_by_role("button", name="Continue as my copy").first).to_be_visible()

    model.reply(" ".join(f"w{i:03d}" for i in range(120)), chunk_delay=0.03)
    await send(author, "Talk about the quarter")
    streaming = turns(reader).last
    await expect(streaming.locator(".live")).to_contain_text("w010")  # the reader's page streams live
    await expect(streaming.locator("button.stop")).to_have_count(0)
    await _shot(reader, "2-reader-live")
    await turn_ended(streaming)
    await turn_ended(turns(author).last)
    await _shot(reader, "3-reader-page")

    await author.get_by_role("button", name="Session actions").click()
    await author.get_by_role("button", name="Stop sharing").click()
    await expect(reader.locator("#stream-notice")).to_contain_text("no longer shared with you")
    await expect(reader.locator("#stream-notice a")).to_have_text("Back to your sessions")
    gone = await reader.request.get(f"/sessions/{session.id}/")  # with the reader's login
    assert gone.status == 404 and "<h1>Not found</h1>" in await gone.text()  # Aptix's page, not a bare one


async def test_continue_as_my_copy_opens_the_readers_own_session(sign_in, alice, bob, answered_session):
    session = await answered_session("Q3 summary", "Revenue was up 4%.", "How did Q3 go?")
    owner = await sign_in(alice)
    await open_session(owner, session.id)
    await owner.get_by_role("button", name="Session actions").click()
    await owner.get_by_role("button", name="Share with Team A").click()
    await expect(owner.locator(".messages")).to_contain_text("Shared with Team A")

    reader = await sign_in(bob)
    await _shot(reader, "4-reader-sidebar")
    await reader.locator(".shared-sessions").get_by_role("link", name=re.compile("Q3 summary")).click()
    await reader.locator("#read-only-bar").get_by_role("button", name="Continue as my copy").click()
    await expect(reader.locator("#session-title")).to_have_text("Q3 summary (copy)")
    await expect(reader.locator("#message")).to_be_visible()
    await expect(turns(reader).first).to_contain_text("Revenue was up 4%.")
    await _shot(reader, "5-copy")
