"""What the page says when the server refuses or ends something: a turn past
the user's rate shows the server's reason under the composer (it used to be cleared right after it was
swapped in, or replaced by "The request failed (429)"), and a page whose login ended says so instead
of streaming on or reconnecting in a loop."""

from __future__ import annotations

import re

import pytest
from asgiref.sync import sync_to_async

from agents.sessions import session_create
from tests.helpers import async_db

from .live import expect, open_session, send, turn_ended, turns

pytestmark = [pytest.mark.asyncio(loop_scope="session"), async_db]


@pytest.fixture(scope="module")
def daphne_env() -> dict[str, str]:
    return {"APTIX_RATE_TURNS": "1/h"}  # the second message of a user is over the limit


async def test_a_message_over_the_rate_limit_says_why_under_the_composer(sign_in, alice, team_a):
    session = await sync_to_async(session_create)(team=team_a, user=alice, execution="ask")
    page = await sign_in(alice)
    await open_session(page, session.id)
    await send(page, "Hello")
    await turn_ended(turns(page).nth(0))
    await send(page, "Hello again")
    await expect(page.locator("#composer-error")).to_contain_text("Too many new messages")
    await expect(turns(page)).to_have_count(1)  # nothing was written


async def test_logging_out_in_another_tab_ends_the_live_view_with_a_notice(sign_in, alice, team_a):
    session = await sync_to_async(session_create)(team=team_a, user=alice, execution="ask")
    page = await sign_in(alice)
    await open_session(page, session.id)
    other = await page.context.new_page()  # the same browser: the same login
    await other.goto("/")
    await other.get_by_role("button", name="Log out").click()
    # The notice says what happened and leads to the way on.
    await expect(page.locator("#stream-notice")).to_contain_text("You were signed out")
    await expect(page.locator("#stream-notice a")).to_have_text("Sign in again")
    await page.locator("#stream-notice a").click()
    await expect(page).to_have_url(re.compile(r"/login/\?next=/sessions/" + session.id + "/$"))
