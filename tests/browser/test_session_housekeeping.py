"""Conversation management in a real browser: the
session menu renames, pins, archives, exports and (after a confirmation) deletes; the sidebar shows
more than a page of sessions and search results with a snippet of where they match."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from asgiref.sync import sync_to_async

from agents.models import AgentSession
from agents.sessions import session_create
from agents.web.views.sidebar import PAGE_SIZE
from tests.helpers import answered_turn, async_db

from .live import ARTIFACTS, expect, open_session

pytestmark = [pytest.mark.asyncio(loop_scope="session"), async_db]


@pytest.fixture
def make_session(team_a, alice):
    def make(title: str, answer: str = "") -> AgentSession:
        if answer:
            return answered_turn(team_a, alice, title, answer).session
        return session_create(team=team_a, user=alice, title=title)

    return sync_to_async(make)


async def _shot(page, name: str) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    await page.screenshot(path=str(ARTIFACTS / name))


async def test_rename_pin_archive_and_export_from_the_session_menu(sign_in, alice, make_session):
    await make_session("Older work")
    session = await make_session("Draft", answer="The answer.")
    page = await sign_in(alice)
    await open_session(page, session.id)
    menu = page.locator("#session-menu")
    await page.get_by_role("button", name="Session actions").click()
    await expect(menu).to_be_visible()
    await _shot(page, "session-menu.png")
    await menu.get_by_label("Title").fill("Quarterly revenue")
    await menu.get_by_role("button", name="Rename").click()
    await expect(page.locator("#session-title")).to_have_text("Quarterly revenue")
    await expect(page.locator(".messages")).to_contain_text("Session renamed.")
    await _shot(page, "session-renamed.png")
    await page.locator(".messages li").click()  # dismissed
    await expect(page.locator(".messages li")).to_have_count(0)

    await page.get_by_role("button", name="Session actions").click()
    await menu.get_by_role("button", name="Pin to the top").click()
    first = page.locator("#session-list li").first
    await expect(first).to_contain_text("Quarterly revenue")
    await expect(first.locator(".pin-mark")).to_be_visible()

    await page.get_by_role("button", name="Session actions").click()
    async with page.expect_download() as download_info:
        await menu.get_by_role("link", name="JSON").click()
    download = await download_info.value
    assert download.suggested_filename == f"aptix-session-{session.id}.json"
    data = json.loads(Path(await download.path()).read_text())
    assert data["session"]["title"] == "Quarterly revenue" and data["turns"][0]["answer"] == "The answer."

    await menu.get_by_role("button", name="Archive").click()
    await expect(page.locator("#session-list")).not_to_contain_text("Quarterly revenue")
    await page.select_option("#filter-view", "archived")
    await expect(page.locator("#session-list")).to_contain_text("Quarterly revenue")
    await expect(page.locator("#session-list")).not_to_contain_text("Older work")


def _overlap(a: dict, b: dict) -> bool:
    return not (
        a["x"] + a["width"] <= b["x"]
        or b["x"] + b["width"] <= a["x"]
        or a["y"] + a["height"] <= b["y"]
        or b["y"] + b["height"] <= a["y"]
    )


@pytest.mark.parametrize("viewport", [None, {"width": 390, "height": 844}], ids=["desktop", "phone"])
async def test_a_notice_covers_neither_the_heading_nor_the_composer_and_goes_by_itself(
    sign_in, alice, make_session, viewport
):
    """ "Pinned…", "Deleted…" sat on the session's heading until clicked away."""
    session = await make_session("A session whose title is long enough to be cut short in the header")
    page = await sign_in(alice, viewport=viewport)
    await open_session(page, session.id)
    await page.get_by_role("button", name="Session actions").click()
    await page.locator("#session-menu").get_by_role("button", name="Pin to the top").click()
    notice = page.locator(".workspace > .messages li")
    await expect(notice).to_be_visible()
    box = await notice.bounding_box()
    for covered in ["#session-title", "#composer", "#mode-badge"]:
        assert not _overlap(box, await page.locator(covered).bounding_box()), covered
    await expect(notice).to_have_count(0, timeout=10_000)  # nobody clicked it


async def test_delete_asks_first_and_then_the_session_is_gone(sign_in, alice, make_session):
    session = await make_session("Throwaway")
    page = await sign_in(alice)
    await open_session(page, session.id)
    await page.get_by_role("button", name="Session actions").click()
    await page.locator("#session-menu").get_by_role("button", name="Delete…").click()
    confirm = page.locator("#delete-confirm")
    await expect(confirm).to_be_visible()
    await expect(confirm).to_contain_text("Delete “Throwaway”?")
    await _shot(page, "session-delete-confirm.png")
    await confirm.get_by_role("button", name="Cancel").click()
    await expect(confirm).to_be_hidden()
    assert (await AgentSession.objects.aget(pk=session.id)).deleted_at is None

    await expect(page.locator("#session-menu")).to_be_visible()  # Cancel goes back to the menu
    await page.locator("#session-menu").get_by_role("button", name="Delete…").click()
    await confirm.get_by_role("button", name="Delete", exact=True).click()
    await expect(page).to_have_url(re.compile(r"/$"))
    await expect(page.locator(".messages")).to_contain_text("Deleted “Throwaway”.")
    await expect(page.locator("#session-list")).not_to_contain_text("Throwaway")
    assert (await page.goto(f"/sessions/{session.id}/")).status == 404


async def test_the_sidebar_shows_more_and_search_snippets(sign_in, alice, team_a, make_session):
    await make_session("Fruit sales", answer="Plums sold best in March, then pears in April.")
    await AgentSession.objects.abulk_create(
        [AgentSession(team=team_a, user=alice, mode="general", title=f"Filler {i:03}") for i in range(PAGE_SIZE + 2)]
    )
    page = await sign_in(alice)
    items = page.locator("#session-list li:not(.more)")
    await expect(items).to_have_count(PAGE_SIZE)
    await page.get_by_role("link", name="Show more").click()
    await expect(items).to_have_count(PAGE_SIZE + 3)
    await expect(page.get_by_role("link", name="Show more")).to_have_count(0)

    await page.fill("#filter-q", "pears")
    snippet = page.locator("#session-list .snippet")
    await expect(snippet).to_have_count(1)
    await expect(snippet).to_contain_text("Aptix: Plums sold best in March, then pears in April.")
    await expect(snippet.locator("mark")).to_have_text("pears")
    await _shot(page, "sidebar-search-snippet.png")


async def test_a_session_with_a_new_turn_moves_first_in_every_tab(sign_in, alice, make_session):
    """The sidebar kept its order until a reload: a tab on another session never saw the change."""
    older = await make_session("Older plans")
    newer = await make_session("Newer plans")
    watching = await sign_in(alice)
    await open_session(watching, newer.id)
    titles = watching.locator("#session-list li .s-title")
    await expect(titles.first).to_have_text("Newer plans")

    writing = await watching.context.new_page()  # a second tab, same login
    await open_session(writing, older.id)
    await writing.locator("#message").fill("What modes are there?")
    await writing.locator("#message").press("Enter")
    await expect(titles.first).to_have_text("Older plans")  # the other tab, without a reload
    await expect(writing.locator("#session-list li .s-title").first).to_have_text("Older plans")
    await expect(watching.locator("#session-list li.current .s-title")).to_have_text("Newer plans")
