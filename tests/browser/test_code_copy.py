"""Code and copy in a real browser: code in an
answer is highlighted in the light and the dark theme, labelled with its language, and its copy
button, like the answer's, puts the text on the clipboard and says "Copied"."""

from __future__ import annotations

import pytest

from tests.helpers import async_db

from .live import ARTIFACTS, expect, open_session, turns

pytestmark = [pytest.mark.asyncio(loop_scope="session"), async_db]

CODE = "def total(xs):\n    return sum(x * 2 for x in xs)  # <doubled>"
ANSWER = f"Use this:\n\n```python\n{CODE}\n```\n\nand run it with `total([1, 2])`."


async def _clipboard(page) -> str:
    return await page.evaluate("() => navigator.clipboard.readText()")


async def test_a_code_block_is_highlighted_labelled_and_copied(sign_in, alice, answered_session, daphne_server):
    session = await answered_session("Code review", ANSWER, "How do I double and sum?")
    page = await sign_in(alice)
    await page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=daphne_server.url)
    await open_session(page, session.id)
    block = turns(page).first.locator(".answer .code-block")
    await expect(block.locator(".code-lang")).to_have_text("Python")
    await expect(block.locator("code span.k").first).to_have_css("color", "rgb(0, 128, 0)")  # default style
    await expect(block.locator("code span.c1")).to_have_text("# <doubled>")

    copy = block.get_by_role("button", name="Copy code")
    await copy.click()
    await expect(copy).to_have_text("Copied")
    await expect(copy).to_have_class("copy copied")
    assert await _clipboard(page) == CODE + "\n"
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    await page.screenshot(path=str(ARTIFACTS / "code-copy-light.png"))
    await expect(copy).to_have_text("Copy")  # the state passes


async def test_the_answer_copies_as_markdown(sign_in, alice, answered_session, daphne_server):
    session = await answered_session("Code review", ANSWER, "How do I double and sum?")
    page = await sign_in(alice)
    await page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=daphne_server.url)
    await open_session(page, session.id)
    copy = turns(page).first.get_by_role("button", name="Copy the answer as Markdown")
    await copy.click()
    await expect(copy).to_have_text("Copied")
    assert await _clipboard(page) == ANSWER


async def test_the_dark_theme_highlights_with_the_dark_style(sign_in, alice, answered_session):
    session = await answered_session("Code review", ANSWER, "How do I double and sum?")
    page = await sign_in(alice, color_scheme="dark")
    await open_session(page, session.id)
    block = turns(page).first.locator(".answer .code-block")
    await expect(block.locator("code span.k").first).to_have_css("color", "rgb(255, 123, 114)")  # github-dark
    await expect(block).to_have_css("background-color", "rgb(13, 17, 23)")
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    await page.screenshot(path=str(ARTIFACTS / "code-copy-dark.png"))
