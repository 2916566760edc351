"""The answer's Copy button fetches the answer's Markdown when clicked (so the page and the
stream carry each answer once). With ClipboardItem (Chromium) the clipboard write starts in the
click with a promise of the text; without it the text is fetched, then written."""

from __future__ import annotations

import pytest
from asgiref.sync import sync_to_async

from agents.models import Turn
from tests.helpers import async_db

from .live import expect, open_session, turns

pytestmark = [pytest.mark.asyncio(loop_scope="session"), async_db]

ANSWER = 'Totals:\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n```sh\necho "<x>"\n```\n'


async def test_without_clipboarditem_the_markdown_is_fetched_then_written(
    sign_in, alice, answered_session, daphne_server
):
    session = await answered_session("Copy", ANSWER, "Totals?")
    page = await sign_in(alice)
    await page.add_init_script("delete window.ClipboardItem")
    await page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=daphne_server.url)
    await open_session(page, session.id)
    assert await page.evaluate("() => typeof window.ClipboardItem") == "undefined"
    copy = turns(page).first.get_by_role("button", name="Copy the answer as Markdown")
    async with page.expect_response(lambda r: r.url.endswith("/answer.md")) as answer:
        await copy.click()
    assert (await answer.value).status == 200
    await expect(copy).to_have_text("Copied")
    assert await page.evaluate("() => navigator.clipboard.readText()") == ANSWER


async def test_a_copy_the_server_refuses_says_so(sign_in, alice, answered_session, daphne_server):
    session = await answered_session("Copy", ANSWER, "Totals?")
    page = await sign_in(alice)
    await page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=daphne_server.url)
    await open_session(page, session.id)
    await sync_to_async(Turn.objects.filter(session=session).delete)()  # gone since the page was drawn
    copy = turns(page).first.get_by_role("button", name="Copy the answer as Markdown")
    await copy.click()
    await expect(copy).to_have_text("Copy failed")


async def test_a_write_the_clipboard_refuses_before_the_text_arrives_leaves_no_uncaught_error(
    sign_in, alice, answered_session, daphne_server
):
    """The clipboard may refuse a write without reading the text's promise (the page lost focus,
    say). A refused fetch of the text must then not surface as an unhandled rejection (the
    `open_page` fixture fails the test on any); the button says the copy failed."""
    session = await answered_session("Copy", ANSWER, "Totals?")
    page = await sign_in(alice)
    await page.add_init_script(
        "navigator.clipboard.write = () => "
        "Promise.reject(new DOMException('Document is not focused.', 'NotAllowedError'))"
    )
    await open_session(page, session.id)
    await sync_to_async(Turn.objects.filter(session=session).delete)()
    copy = turns(page).first.get_by_role("button", name="Copy the answer as Markdown")
    async with page.expect_response(lambda r: r.url.endswith("/answer.md")) as answer:
        await copy.click()
    assert (await answer.value).status == 404
    await expect(copy).to_have_text("Copy failed")
    # The page's rejection handlers have run once the 404 has reached script and been reported.
    await page.evaluate("() => new Promise(resolve => setTimeout(resolve, 0))")
