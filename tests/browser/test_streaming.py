"""The live stream in a real browser, against a scripted model (tests/helpers/scripted_model.py) on
loopback that the live server uses as its OpenAI-compatible provider: stopping a long turn, reloading
in the middle of one, and model output that tries to run script."""

from __future__ import annotations

import asyncio

import pytest

from agents.models import Turn, TurnEvent
from tests.helpers import async_db

from .live import (
    expect,
    open_session,
    open_session_stream_held,
    scripted_env,
    send,
    stream_open,
    turn_ended,
    turns,
)

pytestmark = [pytest.mark.asyncio(loop_scope="session"), async_db]


@pytest.fixture(scope="module")
def daphne_env(switchboard) -> dict[str, str]:
    return scripted_env(switchboard)


def words(count: int, prefix: str = "w") -> str:
    return " ".join(f"{prefix}{i:03d}" for i in range(count))


@pytest.mark.parametrize("how", ["stop button", "escape key"])
async def test_stop_ends_a_long_turn_as_cancelled(sign_in, alice, make_session, model, how):
    model.reply(words(600), chunk_delay=0.05)  # 300 chunks: 15 s unless stopped
    model.reply("Back again.")
    session = await make_session(mode="general", execution="ask")
    page = await sign_in(alice)
    await open_session(page, session.id)

    await send(page, "Talk for a long time")
    turn = turns(page).first
    await expect(turn.locator(".live")).to_contain_text("w005")  # streaming
    # While it runs the box takes the next message; Send waits for the turn.
    await expect(page.locator("#composer button[type=submit]")).to_be_disabled()
    stop = turn.locator(".turn-status .stop")
    if how == "stop button":
        await stop.click()
    else:
        await page.keyboard.press("Escape")

    await turn_ended(turn, "cancelled")
    await expect(turn.locator(".notice")).to_have_text("Stopped.")
    await expect(turn.locator(".answer")).to_contain_text("w000 w001 w002 w003 w004 w005")  # kept
    await expect(stop).to_have_count(0)
    await asyncio.wait_for(model.stream_cancelled.wait(), 10)  # the model call was abandoned, too
    saved = await Turn.objects.aget(session_id=session.id)
    assert saved.status == Turn.Status.CANCELLED and saved.finished_at is not None
    assert saved.answer.startswith("w000 w001") and len(saved.answer) < len(words(600))
    assert not model.stream_finished.is_set()

    await expect(page.locator("#composer button[type=submit]")).to_be_enabled()  # the session takes the next one
    await send(page, "Are you there?")
    await turn_ended(turns(page).nth(1))
    await expect(turns(page).nth(1).locator(".answer")).to_have_text("Back again.")


async def streaming_snapshot(page, marker: str) -> dict:
    """What the (single) turn shows at the moment its streamed text first contains `marker`, read in
    one go in the page: its status, its tool cards, the streamed text."""
    handle = await page.wait_for_function(
        """marker => {
        const turn = document.querySelector('#timeline .turn'), live = turn && turn.querySelector('.live');
        if (!live || !live.textContent.includes(marker)) return false;
        return {running: turn.classList.contains('status-running'), live: live.textContent.trim(),
                cards: [...turn.querySelectorAll('.tool-card')].map(card => card.id)};
    }""",
        arg=marker,
    )
    return await handle.json_value()


async def test_reload_mid_turn_resumes_without_duplicates(sign_in, alice, make_session, model):
    answer = words(200) + " THE-END"
    first = model.reply("Checking the modes first.", tool_calls=[("agent_list_modes", {})])
    model.reply(answer, chunk_delay=0.05)  # 100 chunks, about 5 s
    card = f"tool-{first.tool_calls[0].id}"
    session = await make_session(mode="general", execution="agent")
    page = await sign_in(alice)
    await open_session(page, session.id)

    await send(page, "List the modes, then talk")
    # Streaming: the tool card once, the text so far once.
    before = await streaming_snapshot(page, "w020")
    assert before["running"] and before["cards"] == [card], before
    assert answer.startswith(before["live"]), before["live"]

    await page.reload()
    await stream_open(page)
    # Still streaming after the reload: the page drawn from the database plus the resumed stream.
    after = await streaming_snapshot(page, "w120")
    assert after["running"] and after["cards"] == [card], after
    assert answer.startswith(after["live"]), after["live"]
    turn = turns(page).first
    await turn_ended(turn)

    saved = await Turn.objects.aget(session_id=session.id)
    assert saved.status == Turn.Status.COMPLETED and saved.answer == answer
    await expect(turns(page)).to_have_count(1)
    await expect(page.locator(f"[id='turn-{saved.id}']")).to_have_count(1)
    await expect(turn.locator(".tool-card")).to_have_count(1)
    await expect(page.locator(f"[id='{card}']")).to_have_count(1)
    await expect(turn.locator(".answer")).to_have_text(answer)
    timeline = await page.locator("#timeline").text_content()
    assert timeline.count("THE-END") == 1 and timeline.count("w150") == 1
    await expect(turn.locator(".live")).to_be_empty()


async def test_a_stream_that_connects_mid_turn_draws_everything_once(sign_in, alice, make_session, model):
    """The page's websocket connects late (a slow network), when the run has already called a tool
    and streamed part of its answer: the replay must draw each of those once, not the turn as it is
    now *and* every event again."""
    answer = words(160) + " THE-END"
    first = model.reply("Checking the modes first.", tool_calls=[("agent_list_modes", {})])
    model.reply(answer, chunk_delay=0.05)
    card = f"tool-{first.tool_calls[0].id}"
    session = await make_session(mode="general", execution="agent")
    page = await sign_in(alice)
    run_is_streaming = asyncio.Event()
    await open_session_stream_held(page, session.id, until=run_is_streaming)
    await send(page, "List the modes, then talk")

    async def answer_streaming():  # in the server: the page cannot tell, its stream is not connected yet
        while await TurnEvent.objects.filter(turn__session_id=session.id, type="model.delta").acount() < 8:
            await asyncio.sleep(0.05)

    await asyncio.wait_for(answer_streaming(), 15)
    run_is_streaming.set()

    shown = await streaming_snapshot(page, "w060")
    assert shown["running"] and shown["cards"] == [card], shown
    assert answer.startswith(shown["live"]), shown["live"]
    await expect(turns(page).first.locator(".item-text")).to_have_text(["Checking the modes first."])
    await turn_ended(turns(page).first)
    await expect(turns(page).first.locator(".answer")).to_have_text(answer)


ANSWER_PAYLOAD = (
    'Look: <script>window.__pwned = 1</script> <img src=x onerror="window.__pwned = 2"> '
    "[click me](javascript:window.__pwned=3) and [the docs](https://docs.example.com/guide) "
    '<a href="javascript:window.__pwned=4" onclick="window.__pwned=5">raw link</a>'
)


async def test_model_output_that_tries_to_run_script_stays_inert(sign_in, alice, make_session, model):
    model.reply(
        '<b onmouseover="window.__pwned = 6">Checking</b> first.',
        tool_calls=[("agent_list_modes", {"note": "<img src=x onerror=window.__pwned=7>"})],
    )
    model.reply(ANSWER_PAYLOAD, chunk_delay=0.02)
    session = await make_session(mode="general", execution="agent")
    page = await sign_in(alice)
    await open_session(page, session.id)

    await send(page, "<img src=x onerror=window.__pwned=8> hello")
    turn = turns(page).first
    await turn_ended(turn)

    await expect(turn.locator(".msg-user .bubble")).to_have_text("<img src=x onerror=window.__pwned=8> hello")
    await expect(turn.locator(".item-text")).to_contain_text('<b onmouseover="window.__pwned = 6">Checking</b>')
    await expect(turn.locator(".tool-card pre").first).to_contain_text("<img src=x onerror=window.__pwned=7>")
    answer = turn.locator(".answer")
    await expect(answer).to_contain_text('<script>window.__pwned = 1</script> <img src=x onerror="window.__pwned = 2">')
    await expect(answer).to_contain_text("[click me](javascript:window.__pwned=3)")
    await expect(answer).to_contain_text(
        '<a href="javascript:window.__pwned=4" onclick="window.__pwned=5">raw link</a>'
    )

    timeline = page.locator("#timeline")
    await expect(timeline.locator("script, img[src=x], b")).to_have_count(0)
    await expect(timeline.locator("[onerror], [onclick], [onmouseover], a[href^='javascript:' i]")).to_have_count(0)
    links = answer.locator("a")
    await expect(links).to_have_count(1)
    await expect(links).to_have_attribute("href", "https://docs.example.com/guide")
    await expect(links).to_have_attribute("rel", "noopener noreferrer")

    await turn.locator(".item-text").hover()
    await answer.get_by_text("click me", exact=False).click()
    await answer.get_by_text("raw link", exact=False).click()
    assert await page.evaluate("typeof window.__pwned") == "undefined"
    await open_session(page, session.id)  # the page as rendered from the database: just as inert
    await expect(turns(page).first.locator(".answer")).to_contain_text("<script>window.__pwned = 1</script>")
    inert = page.locator("#timeline").locator("script, [onerror], [onclick], a[href^='javascript:' i]")
    await expect(inert).to_have_count(0)
    assert await page.evaluate("typeof window.__pwned") == "undefined"
