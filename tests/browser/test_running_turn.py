"""The workspace around a running turn, in a real browser against the scripted model: Esc closes
what is open before it stops anything, a second tab sees why its message was refused and keeps its
draft, a stopped turn's tool card and token count say what happened, the mode popover follows a manual
switch, and a user's pasted code keeps its whitespace."""

from __future__ import annotations

import asyncio
import json
import re
import sys

import pytest

from agents.models import Turn
from agents.turns import ERROR_TURN_RUNNING
from modes.models import AgentMode
from tests.helpers import async_db

from .live import ROOT, expect, open_session, scripted_env, send, stream_open, turn_ended, turns

pytestmark = [pytest.mark.asyncio(loop_scope="session"), async_db]

FIXTURE_SERVER = ROOT / "tests" / "tools" / "mcp" / "mcp_fixture_server.py"


@pytest.fixture(scope="module")
def daphne_env(switchboard, tmp_path_factory) -> dict[str, str]:
    """The scripted model, and the fixture MCP server (its `sleep` tool runs as long as it is told)."""
    config = tmp_path_factory.mktemp("mcp") / "mcp.json"
    server = {"command": sys.executable, "args": [str(FIXTURE_SERVER)]}
    config.write_text(json.dumps({"mcpServers": {"fixture": server}}))
    return {
        **scripted_env(switchboard),
        "APTIX_MCP_AUTOSTART": "true",
        "APTIX_MCP_CONFIG": str(config),
    }


def words(count: int) -> str:
    return " ".join(f"w{i:03d}" for i in range(count))


async def streaming(page, word: str):
    turn = turns(page).last
    await expect(turn.locator(".live")).to_contain_text(word)
    return turn


def cancels(page) -> list[str]:
    """The URLs of the Stop requests the page makes from now on."""
    seen: list[str] = []
    page.on("request", lambda request: seen.append(request.url) if request.url.endswith("/cancel/") else None)
    return seen


async def test_escape_closes_the_popover_and_clears_the_filter_before_it_stops_the_turn(
    sign_in, alice, make_session, model
):
    model.reply(words(600), chunk_delay=0.05)  # 15 s unless stopped
    session = await make_session(mode="general", execution="ask")
    page = await sign_in(alice)
    await open_session(page, session.id)
    stops = cancels(page)
    await send(page, "Talk for a long time")
    turn = await streaming(page, "w005")

    await page.get_by_role("button", name="Tools").click()
    await expect(page.locator("#tools-panel")).to_be_visible()
    await page.keyboard.press("Escape")
    await expect(page.locator("#tools-panel")).to_be_hidden()  # the innermost open thing closed...

    await page.fill("#filter-q", "nothing like this")
    await page.keyboard.press("Escape")
    await expect(page.locator("#filter-q")).to_have_value("")  # ...the search field cleared...
    await streaming(page, "w120")  # ...and the turn streamed on, seconds later
    assert stops == []
    await expect(turn).to_have_class(re.compile(r"\bstatus-running\b"))

    # focus in the conversation, nothing open: now Esc stops the turn
    await page.locator("#timeline").click(position={"x": 4, "y": 4})
    await page.keyboard.press("Escape")
    await turn_ended(turn, "cancelled")
    assert len(stops) == 1


async def test_a_second_tab_shows_why_its_message_was_refused_and_keeps_the_draft(sign_in, alice, make_session, model):
    model.reply(words(600), chunk_delay=0.05)
    session = await make_session(mode="general", execution="ask")
    page = await sign_in(alice)
    await open_session(page, session.id)
    other = await page.context.new_page()  # a second tab, same login
    await open_session(other, session.id)

    await send(page, "Talk for a long time")
    await streaming(other, "w005")
    draft = "def f(x):\n    return x  # my draft"
    await send(other, draft)
    await expect(other.locator("#composer-error")).to_have_text(ERROR_TURN_RUNNING)
    await expect(other.locator("#message")).to_have_value(draft)

    await turns(page).last.locator(".turn-status .stop").click()  # the turn ends: both composers redrawn
    await turn_ended(turns(other).last, "cancelled")
    await expect(other.locator("#message")).to_be_enabled()
    await expect(other.locator("#message")).to_have_value(draft)  # the draft survived the redraw
    await expect(other.locator("#composer-error")).to_have_text(ERROR_TURN_RUNNING)  # and so did its reason
    assert await Turn.objects.filter(session_id=session.id).acount() == 1

    model.reply("Sent now.")
    await other.locator("#message").press("Enter")  # the next send: the reason goes
    await expect(other.locator("#composer-error")).to_have_text("")
    await turn_ended(turns(other).last)


async def _wait_for_mcp_server(page, session_id: str, server: str) -> None:
    """The MCP servers start in the background with Daphne: reload until the Tools panel says ready."""
    for _ in range(60):
        state = page.locator(f"#tools-body .server-head:has(strong:text-is('{server}')) .state")
        if await state.count() and "state-ready" in (await state.get_attribute("class") or ""):
            return
        await page.wait_for_timeout(250)  # polling a server-side state the page only shows on load
        await open_session(page, session_id)
    raise AssertionError(f"MCP server {server} never became ready")


@pytest.fixture
def fixture_tools_in_general(db):
    """General offers the fixture server's tools and runs them without asking."""
    AgentMode.objects.filter(key="general").update(tool_policy=["*"], approval_policy=["fixture.*: auto"])


async def test_a_stopped_turn_ends_its_running_tool_card_and_counts_its_tokens(
    sign_in, alice, make_session, model, fixture_tools_in_general
):
    model.reply("Waiting on the fixture.", tool_calls=[("fixture__sleep", {"seconds": 60})])
    session = await make_session(mode="general", execution="agent")
    page = await sign_in(alice)
    await open_session(page, session.id)
    await _wait_for_mcp_server(page, session.id, "fixture")

    await send(page, "Sleep for a while")
    turn = turns(page).last
    card = turn.locator(".tool-card")
    await expect(card).to_contain_text("running…")
    elapsed = turn.locator(".turn-status .elapsed")  # what the turn waits for: the tool, not the model
    await expect(elapsed).to_have_text(re.compile(r"running fixture__sleep · \d+ s"))
    await turn.locator(".turn-status .stop").click()
    await turn_ended(turn, "cancelled")
    for _ in range(2):  # live, then after a reload
        await expect(card).to_have_class(re.compile(r"\btool-stopped\b"))
        await expect(card).not_to_contain_text("running…")
        await expect(card).to_contain_text("not finished")
        await open_session(page, session.id)


async def test_a_stopped_stream_reports_the_tokens_it_used(sign_in, alice, make_session, model):
    model.reply(words(600), chunk_delay=0.05)
    session = await make_session(mode="general", execution="ask")
    page = await sign_in(alice)
    await open_session(page, session.id)
    await send(page, "Talk for a long time")
    turn = await streaming(page, "w170")  # about 850 characters
    async with page.expect_response(lambda r: r.url.endswith("/cancel/")) as stopped:
        await turn.locator(".turn-status .stop").click()
    assert (await stopped.value).status == 204  # the Stop reached the server (and a failure says which side)
    await turn_ended(turn, "cancelled")
    status = turn.locator(".turn-status")
    await expect(status).to_contain_text("(estimated)")
    tokens = int(re.search(r"~(\d+) tokens", await status.inner_text()).group(1))
    answer = (await Turn.objects.aget(session_id=session.id)).answer
    assert tokens >= len(answer) // 4 > 200  # at least what was streamed, never "0 tokens"
    await open_session(page, session.id)
    await expect(turns(page).last.locator(".turn-status")).to_contain_text(f"~{tokens} tokens (estimated)")


async def test_the_mode_popover_follows_a_manual_switch(sign_in, alice, make_session):
    session = await make_session(mode="general", execution="ask")
    page = await sign_in(alice)
    await open_session(page, session.id)
    badge = page.locator("#mode-badge")
    await expect(badge).to_contain_text("General")  # the display name, not the key

    await badge.click()
    popover = page.locator("#mode-popover")
    await popover.get_by_role("button", name="Switch to Data Analysis").click()
    await expect(badge).to_contain_text("Data Analysis")
    current = popover.locator("li.current")
    await expect(current).to_contain_text("Data Analysis")
    await expect(current.locator(".badge")).to_have_text("current")
    await expect(popover.get_by_role("button", name="Switch to Data Analysis")).to_have_count(0)
    await expect(popover.get_by_role("button", name="Switch to General")).to_have_count(1)
    await popover.get_by_role("button", name="Switch to General").click()  # the fresh list works, too
    await expect(badge).to_contain_text("General")
    await expect(popover.locator("li.current")).to_contain_text("General")


async def test_a_pasted_code_block_keeps_its_lines_and_indentation(sign_in, alice, make_session, model):
    model.reply("Looks fine.")
    session = await make_session(mode="general", execution="ask")
    page = await sign_in(alice)
    await open_session(page, session.id)
    message = "Why does this fail?\n\n```python\ndef f(x):\n    if x:\n        return 1\n```\nThanks,\n  Alice"
    await send(page, message)  # Enter sends; fill() put the line breaks in
    bubble = turns(page).last.locator(".msg-user .bubble")
    await expect(bubble.locator("pre code.language-python")).to_have_text("def f(x):\n    if x:\n        return 1")
    await expect(bubble.locator(".plain").last).to_have_text("Thanks,\n  Alice")
    # expect() retries: the send's copy of the turn may be replaced by the stream's meanwhile.
    await expect(bubble.locator(".plain").last).to_have_css("white-space", "pre-wrap")
    await turn_ended(turns(page).last)
    await open_session(page, session.id)  # the same from the database
    await expect(turns(page).last.locator(".msg-user pre code")).to_have_text("def f(x):\n    if x:\n        return 1")


async def test_an_answer_longer_than_a_client_frame_may_be_still_reaches_the_page(sign_in, alice, make_session, model):
    """Daphne's message limit holds both ways: the server's own fragments must not be cut to the 4 kB
    a client may send (aptix_serve), or every long answer would leave its turn running on screen."""
    model.reply(words(1500))  # 7.5 kB of text
    session = await make_session(mode="general", execution="ask")
    page = await sign_in(alice)
    await open_session(page, session.id)
    await send(page, "Say a lot")
    await turn_ended(turns(page).last)
    await expect(turns(page).last.locator(".answer")).to_contain_text("w1499")


async def test_the_live_status_line_names_the_model_without_a_reload(sign_in, alice, make_session, model):
    """ "Completed · 1 step · 786 tokens" live; "· <model>" appeared only after a reload."""
    model.reply(words(60), chunk_delay=0.05)
    session = await make_session(mode="general", execution="ask")
    page = await sign_in(alice)
    await open_session(page, session.id)
    await send(page, "Talk for a while")
    turn = await streaming(page, "w003")
    label = (await Turn.objects.aget(session_id=session.id)).model_label
    assert label
    await expect(turn.locator(".turn-status")).to_contain_text(f"· {label}")  # while it runs
    await turn_ended(turn)
    await expect(turn.locator(".turn-status")).to_contain_text(
        re.compile(rf"Completed · 1 step · \d+ tokens · {label}")
    )


async def test_a_long_wait_says_what_it_waits_for_and_counts_without_server_messages(
    sign_in, alice, make_session, model
):
    """103 s to the first token showed only "Step 1 · Stop": the line now says "waiting for the model ·
    N s", counted by the page itself while the socket stays quiet."""
    model.delay(7)
    model.reply("At last.")
    session = await make_session(mode="general", execution="ask")
    page = await sign_in(alice)
    await open_session(page, session.id)
    frames: list[float] = []
    page.on(
        "websocket", lambda ws: ws.on("framereceived", lambda _frame: frames.append(asyncio.get_running_loop().time()))
    )
    await page.reload()  # the socket opens again, now watched
    await stream_open(page)
    await send(page, "Take your time")
    elapsed = turns(page).last.locator(".turn-status .elapsed")
    await expect(elapsed).to_have_text(re.compile(r"waiting for the model · [01] s"))
    start = asyncio.get_running_loop().time()
    await expect(elapsed).to_have_text(re.compile(r"waiting for the model · [3-5] s"), timeout=8_000)
    quiet = [t for t in frames if t > start + 0.5]
    assert len(quiet) <= 1, f"{len(quiet)} socket messages while the page counted"  # none per second
    await turn_ended(turns(page).last)
    await expect(turns(page).last.locator(".turn-status .elapsed")).to_have_count(0)
