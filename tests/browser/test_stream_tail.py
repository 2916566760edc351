"""Streamed text in a real browser (a cheaper stream): each piece comes as a small
`<b data-seq>` frame that static/js/aptix.js appends to the live tail, moving the stream cursor; code
streams into its code block as it comes, and the answer ends highlighted."""

from __future__ import annotations

import pytest

from tests.helpers import async_db

from .live import expect, open_session, scripted_env, send, turn_ended, turns

pytestmark = [pytest.mark.asyncio(loop_scope="session"), async_db]


@pytest.fixture(scope="module")
def daphne_env(switchboard) -> dict[str, str]:
    return scripted_env(switchboard)


async def shown_in_code(page, marker: str) -> int:
    """The stream cursor's seq once the live code block shows `marker`."""
    handle = await page.wait_for_function(
        """marker => {
        const code = document.querySelector('#timeline .turn .live pre code');
        return code && code.textContent.includes(marker) && document.getElementById('stream-cursor').dataset.seq;
    }""",
        arg=marker,
    )
    return int(await handle.json_value())


async def test_code_streams_into_its_code_block_and_the_cursor_follows(sign_in, alice, make_session, model):
    lines = [f"x{i:03d} = {i}\n" for i in range(120)]
    model.reply(pieces=["Code:\n\n```python\n", *lines, "```\n\nDone."], chunk_delay=0.03)
    session = await make_session(mode="general", execution="ask")
    page = await sign_in(alice)
    await open_session(page, session.id)

    await send(page, "Write code")
    early, late = await shown_in_code(page, "x010"), await shown_in_code(page, "x060")
    assert late > early  # appended pieces move the cursor (a reconnect resumes after them)
    live_code = await page.locator("#timeline .turn .live pre code").text_content()
    assert live_code.count("x010 = 10\n") == 1  # each piece once, its line breaks kept

    turn = turns(page).first
    await turn_ended(turn)
    await expect(turn.locator(".answer .code-block code .mi")).to_have_count(120)  # highlighted at the end
    await expect(turn.locator(".answer")).to_contain_text("Done.")
    await expect(turn.locator(".live")).to_be_empty()


async def test_text_streamed_since_the_last_rendering_keeps_its_lines(sign_in, alice, make_session, model):
    """Past the last whole rendering, streamed text shows as its Markdown source: line by line, not
    run together into one paragraph (agents/web/live.py renders it whole again only at the end)."""
    long = "Intro paragraph that is long enough. " * 60  # past RERENDER_MAX_CHARS: no rendering until the end
    model.reply(pieces=[long, "\n\n- first point\n", "- second point\n", *["more "] * 60], chunk_delay=0.03)
    session = await make_session(mode="general", execution="ask")
    page = await sign_in(alice)
    await open_session(page, session.id)

    await send(page, "Write a list")
    tail = page.locator("#live-tail")
    await expect(tail).to_contain_text("- second point")
    box = await tail.bounding_box()
    line = await page.evaluate("parseFloat(getComputedStyle(document.getElementById('live-tail')).lineHeight)")
    assert box is not None and box["height"] >= 3 * line  # the blank line and the two items on lines of their own
    await turn_ended(turns(page).first)
    await expect(turns(page).first.locator(".answer li")).to_have_count(2)
