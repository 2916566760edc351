"""The document panel in Chromium, against a scripted model: it appears and follows the agent's write
live, Copy puts its Markdown on the clipboard, Edit saves a version of the user's, a timeline card
opens the panel at its version, a hostile document stays inert, the panel is a drawer on a phone, and
axe finds nothing on it.
Screenshots: var/test-artifacts/documents-*.png."""

from __future__ import annotations

import re

import pytest
from asgiref.sync import sync_to_async

from agents.documents.services import document_write
from tests.helpers import async_db

from .axe import AXE_PAGE, violations
from .live import ARTIFACTS, expect, open_session, scripted_env, send, turn_ended, turns

pytestmark = [pytest.mark.asyncio(loop_scope="session"), async_db]

DRAFT = "# TUL-008 API versioning\n\n## Status\n\nDraft\n\n## Contract\n\n- Clients MUST send a version header\n"
PHONE = {"viewport": {"width": 390, "height": 844}, "is_mobile": True, "has_touch": True, "reduced_motion": "reduce"}
HOSTILE = (
    "# Plan\n\n<script>window.__pwned = 1</script>\n\n[click me](javascript:window.__pwned=2)\n\n"
    '<a href="javascript:window.__pwned=3" onclick="window.__pwned=4">raw link</a> '
    "<img src=x onerror=window.__pwned=5>\n"
)


@pytest.fixture(scope="module")
def daphne_env(switchboard) -> dict[str, str]:
    return scripted_env(switchboard)


async def _shot(page, name: str) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    await page.screenshot(path=str(ARTIFACTS / name))


async def test_the_panel_follows_a_live_write_and_an_edit_becomes_the_users_version(
    sign_in, alice, make_session, model, daphne_server
):
    model.reply("", tool_calls=[("document_write", {"title": "TUL-008 API versioning", "content": DRAFT})])
    model.reply("I drafted TUL-008 beside the chat.", chunk_delay=0.01)
    session = await make_session(mode="ddr-authoring", execution="agent")
    page = await sign_in(alice)
    await open_session(page, session.id)
    panel = page.locator("#doc-panel")
    await expect(panel).to_be_hidden()
    await expect(page.locator("#docs-toggle")).to_be_hidden()

    await send(page, "Draft a DDR for API versioning")
    await turn_ended(turns(page).first)
    await expect(panel).to_be_visible()  # drawn by the live stream, no reload
    await expect(page.locator("#doc-panel-title")).to_contain_text("TUL-008 API versioning")
    await expect(panel.locator(".doc-body h2").first).to_have_text("Status")
    await expect(panel.locator(".doc-meta")).to_contain_text("Version 1 of 1 · written by the agent")
    await expect(page.locator(".item-document")).to_contain_text("Document TUL-008 API versioning v1 updated")
    await expect(page.locator("#docs-toggle")).to_be_visible()
    await expect(page.locator("#docs-toggle")).to_have_attribute("aria-expanded", "true")
    await _shot(page, "documents-live.png")

    await page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=daphne_server.url)
    copy = panel.get_by_role("button", name="Copy version 1 as Markdown")
    await copy.click()
    await expect(copy).to_have_text("Copied")
    assert await page.evaluate("() => navigator.clipboard.readText()") == DRAFT

    await panel.get_by_role("button", name="Edit").click()
    editor = panel.locator("#doc-content-input")
    await expect(editor).to_have_value(DRAFT)
    await editor.fill(DRAFT.replace("Draft", "Proposed"))
    await _shot(page, "documents-editor.png")
    await panel.get_by_role("button", name="Save as version 2").click()
    await expect(panel.locator(".doc-meta")).to_contain_text("Version 2 of 2 · edited by alice")
    await expect(panel.locator(".doc-body")).to_contain_text("Proposed")

    await page.locator(".item-document").get_by_role("link", name=re.compile("Open version 1")).click()
    await expect(panel.locator(".doc-meta")).to_contain_text("Version 1 of 2 · written by the agent")
    await panel.locator("summary", has_text="Versions").click()
    await panel.get_by_role("button", name="Compare").click()
    await expect(panel.locator(".doc-diff del")).to_have_text("- Draft")
    await expect(panel.locator(".doc-diff ins")).to_have_text("+ Proposed")
    await _shot(page, "documents-diff.png")

    page_axe = await sign_in(alice, **AXE_PAGE)
    await open_session(page_axe, session.id)
    await expect(page_axe.locator("#doc-panel")).to_be_visible()
    assert await violations(page_axe) == []
    await page_axe.locator("#doc-panel summary").click()
    await page_axe.locator("#doc-panel").get_by_role("button", name="Compare").click()
    await expect(page_axe.locator(".doc-diff")).to_be_visible()
    assert await violations(page_axe) == []


async def test_a_hostile_document_renders_inert(sign_in, alice, make_session):
    session = await make_session(mode="ddr-authoring")
    first = await sync_to_async(document_write)(session_id=session.id, title="<b>Plan</b>", content="# Plan\n")
    await sync_to_async(document_write)(
        session_id=session.id, title="<b>Plan</b>", content=HOSTILE, document_id=first.document_id
    )
    page = await sign_in(alice)
    await open_session(page, session.id)
    panel = page.locator("#doc-panel")
    await expect(page.locator("#doc-panel-title")).to_contain_text("<b>Plan</b>")
    await expect(panel.locator(".doc-body")).to_contain_text("<script>window.__pwned = 1</script>")
    await panel.locator("summary").click()
    await panel.get_by_role("button", name="Compare").click()
    await expect(panel.locator(".doc-diff")).to_contain_text("<script>window.__pwned = 1</script>")
    inert = panel.locator("script, img, b, [onerror], [onclick], a[href^='javascript:' i]")
    await expect(inert).to_have_count(0)
    await panel.get_by_text("click me", exact=False).first.click()
    await panel.get_by_text("raw link", exact=False).first.click()
    assert await page.evaluate("typeof window.__pwned") == "undefined"


async def test_on_a_phone_the_panel_is_a_drawer_behind_documents(sign_in, alice, make_session):
    session = await make_session(mode="ddr-authoring")
    await sync_to_async(document_write)(session_id=session.id, title="TUL-008 API versioning", content=DRAFT)
    page = await sign_in(alice, **PHONE, **AXE_PAGE)
    await open_session(page, session.id)
    toggle = page.get_by_role("button", name="Documents")
    panel = page.locator("#doc-panel")
    await expect(toggle).to_have_attribute("aria-expanded", "false")
    await expect(panel).to_be_hidden()  # closed: neither seen nor reachable with Tab
    await _shot(page, "documents-phone-closed.png")
    assert await violations(page) == []

    await toggle.click()
    await expect(toggle).to_have_attribute("aria-expanded", "true")
    await expect(panel).to_be_visible()
    await expect(page.locator("#doc-panel-title")).to_be_focused()
    box = await panel.bounding_box()
    assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= 390
    await _shot(page, "documents-phone-open.png")
    assert await violations(page) == []

    await page.keyboard.press("Escape")
    await expect(panel).to_be_hidden()
    await expect(toggle).to_be_focused()
    await toggle.click()
    await panel.get_by_role("button", name="Close the document panel").click()
    await expect(panel).to_be_hidden()
    await toggle.click()
    await page.mouse.click(10, 400)  # the shaded page beside the drawer
    await expect(panel).to_be_hidden()
    await expect(toggle).to_have_attribute("aria-expanded", "false")
