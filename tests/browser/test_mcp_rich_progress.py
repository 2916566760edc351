"""MCP progress and rich results in a real browser: a running MCP call's card shows the server's progress live
("2/3 — fetching part 2"), and a result's image (served by the media view to the session's owner),
links and downloads show with the card. The MCP server is tests/tools/mcp/rich_server.py, run by
the live server's MCP host; the model is the scripted one. Screenshots: var/test-artifacts/."""

from __future__ import annotations

import json
import re
import sys

import pytest
from asgiref.sync import sync_to_async

from agents.sessions import session_create
from modes.models import AgentMode
from tests.helpers import async_db

from .live import ARTIFACTS, ROOT, expect, open_session, scripted_env, send, turn_ended, turns

pytestmark = [pytest.mark.asyncio(loop_scope="session"), async_db]

RICH_SERVER = ROOT / "tests" / "tools" / "mcp" / "rich_server.py"


@pytest.fixture(scope="module")
def daphne_env(switchboard, tmp_path_factory) -> dict[str, str]:
    config = tmp_path_factory.mktemp("mcp") / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"rich": {"command": sys.executable, "args": [str(RICH_SERVER)]}}}))
    return {**scripted_env(switchboard), "APTIX_MCP_AUTOSTART": "true", "APTIX_MCP_CONFIG": str(config)}


@pytest.fixture
def agent_session(db, team_a, alice):
    AgentMode.objects.filter(key="general").update(tool_policy=["*"])
    return sync_to_async(lambda: session_create(team=team_a, user=alice, mode="general", execution="agent"))


async def wait_for_rich_server(page, session_id: str) -> None:
    """The MCP servers start in the background with Daphne: reload until the Tools panel says ready."""
    for _ in range(60):
        state = page.locator("#tools-body .server-head:has(strong:text-is('rich')) .state")
        if await state.count() and "state-ready" in (await state.get_attribute("class") or ""):
            return
        await page.wait_for_timeout(250)  # polling a server-side state the page only shows on load
        await open_session(page, session_id)
    raise AssertionError("MCP server rich never became ready")


async def test_progress_shows_live_and_rich_content_shows_with_the_card(sign_in, alice, agent_session, model):
    session = await agent_session()
    model.reply("", tool_calls=[("rich__steps", {"count": 3, "pause": 1.5})])
    model.reply("", tool_calls=[("rich__gallery", {})])
    model.reply("Here is everything.")
    page = await sign_in(alice)
    await open_session(page, session.id)
    await wait_for_rich_server(page, session.id)

    await send(page, "Fetch the parts, then show me the gallery")
    turn = turns(page).last
    steps_card = turn.locator(".tool-card").first
    progress = steps_card.locator(".tool-progress")
    await expect(progress).to_contain_text(re.compile(r"[12]/3 — fetching part [12]"))
    await expect(progress.locator("progress")).to_have_attribute("max", "3")
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    await page.screenshot(
        path=str(ARTIFACTS / "mcp-progress-card.png"), caret="initial"
    )  # hiding the caret injects a style the CSP refuses

    await turn_ended(turn)
    await expect(steps_card).to_have_class(re.compile(r"\btool-ok\b"))
    await expect(steps_card).not_to_contain_text("fetching part")
    media = turn.locator(".tool-media")
    image = media.locator("img")
    await expect(image).to_be_visible()
    await image.scroll_into_view_if_needed()  # the image loads lazily: visible is not yet loaded
    await expect(image).to_have_js_property("complete", True)
    await expect(image).to_have_js_property("naturalWidth", 40)  # served, and decoded
    await expect(media.get_by_role("link", name="report")).to_have_attribute("href", "https://example.com/report.pdf")
    await expect(media.locator("a[href^='javascript:']")).to_have_count(0)
    await expect(media.get_by_role("link", name="audio.wav", exact=True)).to_have_attribute("download", "audio.wav")
    await media.locator(".tool-resource summary").click()
    await expect(media.locator(".tool-resource pre")).to_contain_text("line two")
    await page.screenshot(path=str(ARTIFACTS / "mcp-rich-result.png"), full_page=True, caret="initial")

    await open_session(page, session.id)  # the same after a reload
    await expect(turns(page).last.locator(".tool-media img")).to_be_visible()
