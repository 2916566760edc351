"""A long session in a real browser: the page draws its last turns, scrolling up
loads the earlier ones above without moving what the user reads, and a link to an earlier turn
(#turn-<id>) loads turns until that one is there."""

from __future__ import annotations

import pytest
from asgiref.sync import sync_to_async
from django.utils import timezone

from agents.models import Turn, TurnEvent
from agents.sessions import session_create
from tests.helpers import async_db

from .live import expect, open_session

pytestmark = [pytest.mark.asyncio(loop_scope="session"), async_db]

PAGE = 5
TURNS = 23
ANSWER = "\n\n".join(f"Paragraph {i}: revenue rose in the north and fell in the south." for i in range(30))


@pytest.fixture(scope="module")
def daphne_env() -> dict[str, str]:
    return {"APTIX_SESSION_PAGE_TURNS": str(PAGE)}


@pytest.fixture
def long_session(team_a, alice):
    @sync_to_async
    def make() -> tuple[str, list[str]]:
        session = session_create(team=team_a, user=alice, title="A long session")
        ids = []
        for index in range(1, TURNS + 1):
            turn = Turn.objects.create(
                session=session,
                index=index,
                user_message=f"Question {index}",
                mode=session.mode,
                response_mode=session.mode,
                status=Turn.Status.COMPLETED,
                answer=f"Answer {index}.\n\n{ANSWER}",
                step_count=1,
                finished_at=timezone.now(),
            )
            TurnEvent.objects.bulk_create(
                [
                    TurnEvent(turn=turn, seq=1, type="turn.started", payload={"mode": session.mode, "max_steps": 1}),
                    TurnEvent(turn=turn, seq=2, type="model.delta", payload={"text": "Answer"}),
                    TurnEvent(turn=turn, seq=3, type="turn.completed", payload={"status": "completed"}),
                ]
            )
            ids.append(turn.id)
        return session.id, ids

    return make


async def test_scrolling_up_loads_earlier_turns_above_what_the_user_reads(sign_in, alice, long_session):
    session_id, ids = await long_session()
    page = await sign_in(alice)
    await open_session(page, session_id)
    turns = page.locator("#timeline > .turn")
    await expect(turns).to_have_count(PAGE)
    await expect(page.locator(f"#turn-{ids[-1]}")).to_be_in_viewport()  # the page opens at the newest turn
    first_shown = page.locator(f"#turn-{ids[-PAGE]}")

    await page.locator("#timeline-earlier a").scroll_into_view_if_needed()  # the user scrolls to the top
    await expect(turns).to_have_count(2 * PAGE)
    await expect(page.locator(f"#turn-{ids[-2 * PAGE]}")).to_be_attached()
    await expect(first_shown).to_be_in_viewport()  # the turns came above it: the view did not jump

    while await page.locator("#timeline-earlier a").count():
        shown = await turns.count()
        await page.locator("#timeline-earlier a").scroll_into_view_if_needed()
        await expect(turns).not_to_have_count(shown)
    await expect(turns).to_have_count(TURNS)
    assert await turns.evaluate_all("els => els.map(e => e.id)") == [f"turn-{i}" for i in ids]


async def test_a_link_to_an_earlier_turn_loads_turns_until_it_is_there(sign_in, alice, long_session):
    session_id, ids = await long_session()
    page = await sign_in(alice)
    await page.goto(f"/sessions/{session_id}/#turn-{ids[5]}")  # turn 6: three pages back
    await expect(page.locator(f"#turn-{ids[5]}")).to_be_in_viewport()
    await expect(page.locator("#timeline > .turn")).to_have_count(TURNS - 3)  # turns 4 to 23
    # The "Load earlier turns" button works by a click as well.
    await expect(page.locator("#timeline-earlier a")).to_have_text("Load earlier turns")
    await page.locator("#timeline-earlier a").click()
    await expect(page.locator("#timeline > .turn")).to_have_count(TURNS)
    await expect(page.locator("#timeline-earlier")).to_have_count(0)
