"""Titles (APTIX_AUTO_TITLES): after a session's first answer one small model call without tools names
it, from whichever process ran the turn, after the turn ended; a failing model, a name the user gave
meanwhile or the setting off leave the first message as the title; the offline model and a failing
one leave a title made from the first exchange (what it drew or wrote, the message's key words)."""

from __future__ import annotations

import asyncio
import json
from functools import partial

import pytest
from asgiref.sync import sync_to_async

from agents.llm.client import reply_tokens
from agents.models import AgentSession, Turn
from agents.run.fallback_titles import fallback_title
from agents.run.runners import LocalRunner
from agents.run.titles import TITLE_TOKENS, title_session
from agents.runner import use_runner
from agents.sessions import session_create, session_rename
from agents.submit import turn_submit
from agents.turns import turn_start
from tests.helpers import inline_db
from tests.helpers.turns import add_events, ended_turn
from usage.models import UsageMonth

pytestmark = inline_db


@pytest.fixture(autouse=True)
def _titles_on(settings):
    settings.APTIX_AUTO_TITLES = True  # off for the other tests (tests/conftest.py)


REQUEST = "Chart revenue by month for our orders data, and tell me which month was best please"


async def first_turn(make_session, text: str = REQUEST) -> tuple[AgentSession, Turn]:
    session = await make_session(execution="ask")
    runner = LocalRunner()
    with use_runner(runner):
        submitted = await turn_submit(partial(turn_start, session=session, text=text))
        turn = await runner.wait(submitted.turn.id, submitted.started)
    return session, turn


async def title_of(session: AgentSession, *, changed_from: str = "", wait: float = 3.0) -> str:
    """The session's title, once it differs from `changed_from` (or after `wait` seconds)."""
    deadline = asyncio.get_running_loop().time() + wait
    while True:
        title = (await AgentSession.objects.aget(pk=session.id)).title
        if title != changed_from or asyncio.get_running_loop().time() > deadline:
            return title
        await asyncio.sleep(0.05)


async def test_the_first_answer_names_the_session(make_session, model, llm):
    model.reply("March was best.")
    model.reply('"Monthly revenue chart."')
    session, turn = await first_turn(make_session)
    assert turn.status == "completed" and turn.answer == "March was best."
    assert await title_of(session, changed_from=REQUEST[:80]) == "Monthly revenue chart"
    request = model.last_request
    assert "tools" not in request and REQUEST in request["messages"][-1]["content"]
    answered, titled = (r["max_tokens"] for r in model.requests)  # a name, not a reply's worth of tokens
    assert titled == TITLE_TOKENS < answered == reply_tokens()


async def test_a_failing_model_leaves_the_turn_as_it_was_and_the_key_words_name_the_session(
    make_session, model, llm, settings
):
    settings.APTIX_LLM_MAX_RETRIES = 0
    model.reply("March was best.")
    model.error(500, "the title server is down")
    session, turn = await first_turn(make_session)
    assert turn.status == "completed" and turn.answer == "March was best."
    assert await title_of(session, changed_from=REQUEST[:80]) == "Chart revenue by month orders data"
    assert model.pending == 0


async def test_only_the_first_answer_and_only_when_on(make_session, model, llm, settings):
    settings.APTIX_AUTO_TITLES = False
    model.reply("Hi.")
    session, _ = await first_turn(make_session, "Hello there")
    await asyncio.sleep(0.3)
    assert model.calls == 1 and await title_of(session, wait=0) == "Hello there"

    settings.APTIX_AUTO_TITLES = True
    model.reply("Again.")
    runner = LocalRunner()
    with use_runner(runner):
        submitted = await turn_submit(partial(turn_start, session=session, text="And again"))
        await runner.wait(submitted.turn.id, submitted.started)
    await asyncio.sleep(0.3)
    assert model.calls == 2  # a second answer names nothing


async def test_a_name_the_user_gave_meanwhile_is_kept(make_session, model, llm, settings):
    settings.APTIX_AUTO_TITLES = False
    model.reply("March was best.")
    session, turn = await first_turn(make_session)
    await sync_to_async(session_rename)(session=await AgentSession.objects.aget(pk=session.id), title="Q1 numbers")
    model.reply("Monthly revenue chart")
    turn = await Turn.objects.select_related("session").aget(pk=turn.id)
    assert await title_session(turn) is None
    assert await title_of(session, wait=0) == "Q1 numbers"


async def test_the_offline_model_keeps_a_short_questions_own_words(make_session):
    """The built-in offline model cannot summarise (asked for a title it would answer with its help
    text); a short question with no subject of its own to pick out says more as it is."""
    session, turn = await first_turn(make_session, "What modes are there?")
    assert turn.status == "completed" and turn.model_label == "offline"
    turn = await Turn.objects.select_related("session").aget(pk=turn.id)
    assert await title_session(turn) is None
    assert await title_of(session, wait=0) == "What modes are there?"


async def test_a_title_call_is_charged_to_the_members_usage(make_session, model, llm, team_a, alice):
    model.reply("March was best.", prompt_tokens=100, completion_tokens=10)
    model.reply("Monthly revenue chart", prompt_tokens=40, completion_tokens=5)
    session, _ = await first_turn(make_session)
    assert await title_of(session, changed_from=REQUEST[:80]) == "Monthly revenue chart"
    month = await UsageMonth.objects.aget(team=team_a, user=alice)
    assert (month.prompt_tokens, month.completion_tokens, month.turns) == (140, 15, 1)  # one turn, two calls


async def test_no_title_is_asked_for_once_the_quota_is_used_up(make_session, model, llm, team_a):
    team_a.monthly_token_quota = 100
    await team_a.asave(update_fields=["monthly_token_quota"])
    model.reply("March was best.", prompt_tokens=100, completion_tokens=10)  # the turn uses the month's quota
    model.reply("Monthly revenue chart")
    session, turn = await first_turn(make_session)
    assert turn.status == "completed"
    await asyncio.sleep(0.3)  # the title task ran (and asked nothing)
    assert model.calls == 1 and await title_of(session, wait=0) == REQUEST[:80]


async def test_the_offline_model_names_a_session_after_the_chart_it_drew(make_session):
    session, turn = await first_turn(make_session, "Draw a bar chart of sales: apples 3, pears 5, plums 2")
    assert turn.status == "completed"
    title = await title_of(session, changed_from="Draw a bar chart of sales: apples 3, pears 5, plums 2")
    assert title.endswith("(chart)") and title != turn.user_message, title


# --- the title no model gave, from the first exchange --------------------------------------------


CHART = json.dumps({"url": f"/media/images/{'a' * 32}/{'b' * 32}.png", "alt": "Revenue by month", "kind": "bar"})


@pytest.fixture
def session_of(team_a, alice):
    return lambda: session_create(team=team_a, user=alice, title="first message")


@pytest.mark.parametrize(
    ("message", "events", "files", "title"),
    [
        (
            "Write an ADR about caching",
            [("document.updated", {"documentId": "d1", "title": "Caching layer ADR"})],
            [],
            "Caching layer ADR",
        ),
        (
            "Chart revenue by month",
            [("tool.result", {"id": "c1", "name": "image_gen", "ok": True, "duration_ms": 3, "result": CHART})],
            [],
            "Revenue by month (chart)",
        ),
        (
            "Chart revenue by month",
            [("tool.result", {"id": "c1", "name": "image_gen", "ok": False, "duration_ms": 3, "error": "no"})],
            [],
            "Chart revenue by month",  # a drawing that failed is no artefact
        ),
        ("Which region grew fastest?", [], [{"name": "sales.csv"}], "Region grew fastest · sales.csv"),
        ("What is in it?", [], [{"name": "memo.pdf"}], "memo.pdf"),
        (
            "Can you please summarise this email thread in three bullet points",
            [],
            [],
            "Summarise email thread three bullet points",
        ),
        ("What modes are there?", [], [], ""),
    ],
)
def test_the_fallback_title(session_of, message, events, files, title):
    turn = ended_turn(session_of(), status="completed", message=message, files=files)
    add_events(turn, *events)
    assert fallback_title(turn) == title
