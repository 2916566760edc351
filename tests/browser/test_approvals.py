"""Approval cards in a real browser, with the built-in offline model and the shipped notes MCP server
(a real subprocess writing a real file): a typed "2" after a proposal shows the mode card; a
writing tool shows the tool card (allow once, allow for this session, deny); a waiting card survives
a reload and a restart of the server process."""

from __future__ import annotations

import asyncio
import json

import pytest
from asgiref.sync import sync_to_async

from agents.models import AgentSession, ToolApproval, Turn
from agents.sessions import session_create
from modes.models import ModeHistory
from tests.helpers import async_db

from .live import ROOT, expect, open_session, send, stream_open, turn_ended, turns

pytestmark = [pytest.mark.asyncio(loop_scope="session"), async_db]

DDR_REQUEST = "Write a design decision record for our new caching layer"


@pytest.fixture(scope="module")
def notes_file(tmp_path_factory):
    return tmp_path_factory.mktemp("notes") / "notes.md"


@pytest.fixture(scope="module")
def daphne_env(tmp_path_factory, notes_file) -> dict[str, str]:
    root = tmp_path_factory.mktemp("mcp")
    config = {
        "mcpServers": {
            "notes": {"command": "python", "args": ["-m", "tools.notes_mcp", str(notes_file)], "cwd": str(ROOT)}
        }
    }
    (root / "mcp.json").write_text(json.dumps(config))
    return {"APTIX_MCP_AUTOSTART": "true", "APTIX_MCP_CONFIG": str(root / "mcp.json")}


@pytest.fixture
def make_session(team_a, alice):
    def make(**kwargs) -> AgentSession:
        return session_create(team=team_a, user=alice, **kwargs)

    return make


def card(page):
    return page.locator(".approval-card")


async def notes_server_ready(page) -> None:
    """Reload until the Tools panel says the notes server is ready: the MCP servers start in the
    background with the server process, and a session's first turn may come before (then the offline
    model is offered no notes tool and answers instead of asking)."""
    notes_ready = page.locator("#tools-body .server:has(strong:text-is('notes')) .state-ready")
    for _ in range(100):
        await page.reload()
        if await notes_ready.count():
            break
    await expect(notes_ready).to_have_count(1)
    await stream_open(page)


async def proposed(sign_in, alice, make_session):
    """A page whose session (general, Ask) has just been offered DDR Authoring."""
    session = await sync_to_async(make_session)(mode="general", execution="ask")
    page = await sign_in(alice)
    await open_session(page, session.id)
    await send(page, DDR_REQUEST)
    await turn_ended(turns(page).nth(0))
    return page


async def test_a_typed_choice_shows_the_mode_card_and_switch_runs_it(sign_in, alice, make_session):
    page = await proposed(sign_in, alice, make_session)

    await send(page, "2")  # typed, not the button: no consent yet
    asked = card(page)
    await expect(asked).to_contain_text("The agent wants to switch this session from general to DDR Authoring")
    await expect(page.locator("#session-waiting")).to_have_text("waiting for your approval")
    await expect(page.locator("#session-list li.current")).to_contain_text("waiting")
    await expect(page.locator("#message")).to_be_enabled()  # a new message would decline it
    assert await ModeHistory.objects.acount() == 0

    buttons = asked.locator("button")
    await expect(buttons).to_have_text(["Switch", "Switch in a new session", "Stay in general"])
    await buttons.nth(0).focus()
    await page.keyboard.press("Enter")  # keyboard-accessible
    await turn_ended(turns(page).nth(1))
    await expect(page.locator("#mode-badge")).to_have_text("DDR Authoring")
    await expect(asked).to_contain_text("Approved by alice")
    await expect(page.locator("#session-waiting")).to_have_text("")
    [history] = [h async for h in ModeHistory.objects.all()]
    assert (history.previous_mode, history.new_mode) == ("general", "ddr-authoring")
    # The switch carries the request on in the new mode: a follow-up turn, which ends too (a test
    # that left it running had its database flushed under the follow-up's writes).
    await expect(turns(page)).to_have_count(3)
    await turn_ended(turns(page).nth(2))
    assert (await Turn.objects.order_by("-index").afirst()).mode == "ddr-authoring"


async def test_a_cards_buttons_are_one_height_on_one_line(sign_in, alice, make_session):
    """The primary button was shorter than its neighbours (and set lower by a margin)."""
    page = await proposed(sign_in, alice, make_session)
    await send(page, "2")
    buttons = card(page).locator("button")
    await expect(buttons).to_have_count(3)
    boxes = [await buttons.nth(i).bounding_box() for i in range(3)]
    assert len({round(b["height"]) for b in boxes}) == 1, boxes
    assert len({round(b["y"]) for b in boxes}) == 1, boxes


async def test_stay_keeps_the_mode(sign_in, alice, make_session):
    page = await proposed(sign_in, alice, make_session)
    await send(page, "switch")
    await card(page).locator("button", has_text="Stay in general").click()
    await turn_ended(turns(page).nth(1))
    await expect(card(page)).to_contain_text("Denied by alice")
    await expect(page.locator("#mode-badge")).to_have_text("General")
    assert await ModeHistory.objects.acount() == 0


async def test_the_tool_card_allow_once_for_the_session_and_deny(sign_in, alice, make_session, notes_file):
    session = await sync_to_async(make_session)(mode="general", execution="agent")
    page = await sign_in(alice)
    await open_session(page, session.id)
    await notes_server_ready(page)  # first in a run of its own (-k): the server may still be starting

    await send(page, "note: call the supplier")
    first = turns(page).nth(0)
    asked = first.locator(".approval-card")
    await expect(asked).to_contain_text("The agent wants to run notes__add_note on the notes server")
    await expect(asked.locator(".annotations")).to_contain_text("readOnlyHint: false")
    await expect(asked.locator(".approval-arguments")).to_contain_text('"text": "call the supplier"')
    assert not notes_file.exists()
    choices = [asked.locator("button", has_text=name) for name in ("Allow once", "Allow for this session", "Deny")]
    boxes = [await button.bounding_box() for button in choices]
    assert len({round(b["height"]) for b in boxes}) == 1, boxes  # the primary one no shorter than the rest
    await asked.locator("button", has_text="Allow once").click()
    await turn_ended(first)
    await expect(asked).to_contain_text("Approved by alice")
    assert "call the supplier" in notes_file.read_text()

    await send(page, "note: order paper")
    second = turns(page).nth(1)
    await second.locator(".approval-card button", has_text="Allow for this session").click()
    await turn_ended(second)
    await send(page, "note: book the room")  # granted: runs without asking
    third = turns(page).nth(2)
    await turn_ended(third)
    await expect(third.locator(".approval-card")).to_have_count(0)
    assert "book the room" in notes_file.read_text()
    await page.click("button[popovertarget=tools-panel]")
    grants = page.locator("#tools-body .grants")
    await expect(grants).to_contain_text("notes__add_note")
    await grants.locator("button", has_text="Revoke").click()
    await expect(page.locator("#tools-body .grants")).to_have_count(0)
    await page.keyboard.press("Escape")

    await send(page, "note: never mind")
    fourth = turns(page).nth(3)
    await fourth.locator(".approval-card button", has_text="Deny").click()
    await turn_ended(fourth)
    await expect(fourth.locator(".answer")).to_contain_text("denied")
    assert "never mind" not in notes_file.read_text()
    decisions = [(a.decision, a.scope) async for a in ToolApproval.objects.order_by("requested_at")]
    assert decisions == [("approved", "once"), ("approved", "session"), ("denied", "once")]


async def test_a_waiting_card_survives_a_reload_and_a_server_restart(
    sign_in, alice, make_session, notes_file, daphne_server
):
    session = await sync_to_async(make_session)(mode="general", execution="agent")
    page = await sign_in(alice)
    await open_session(page, session.id)
    await notes_server_ready(page)
    await send(page, "note: survive a restart")
    await expect(card(page).locator("button", has_text="Allow once")).to_be_visible()

    await page.reload()
    await stream_open(page)
    await expect(card(page).locator("button", has_text="Allow once")).to_be_visible()
    await asyncio.to_thread(daphne_server.restart)  # every process that could hold the turn is gone
    # The new process starts its MCP servers on its first request; the page's Tools panel tells when
    # the notes server is back (an approved call to a server still starting fails as unavailable).
    await notes_server_ready(page)
    await card(page).locator("button", has_text="Allow once").click()
    await turn_ended(turns(page).nth(0))
    assert "survive a restart" in notes_file.read_text()


async def test_a_late_send_answer_does_not_lock_the_composer_of_a_waiting_turn(sign_in, alice, make_session):
    """The send request's answer (a busy composer) may arrive after the stream showed the card: the
    composer must stay free, since a new message is how the user declines what waits."""
    session = await sync_to_async(make_session)(mode="general", execution="agent")
    page = await sign_in(alice)
    answered = asyncio.Event()

    async def answer_after_the_card(route):
        response = await route.fetch()
        await expect(card(page).locator("button", has_text="Allow once")).to_be_visible()
        await route.fulfill(response=response)
        answered.set()

    await page.route("**/turns/", answer_after_the_card)
    await open_session(page, session.id)
    await send(page, "note: late answers")
    await asyncio.wait_for(answered.wait(), 30)
    await page.unroute("**/turns/")
    await expect(page.locator("#message")).to_be_enabled()
    await send(page, "Never mind")  # declines the waiting call
    await turn_ended(turns(page).nth(0), "cancelled")
    await expect(card(page)).to_contain_text("Declined by a new message")
