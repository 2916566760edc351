"""Turns against a model server with the quirks of real providers (scripted at the protocol level):
what the user sees and what is stored when a stream is cut off, the server refuses tools, sends
reasoning, hits its output limit or sends no usage."""

from __future__ import annotations

from django.utils.html import escape

from agents.models import TurnEvent
from agents.web.timeline import NOTICE_TOOLS_DROPPED, NOTICE_TRUNCATED, render_turn
from tests.helpers import inline_db
from tests.helpers.events import event_types, events_of

pytestmark = inline_db


async def page_of(turn) -> str:
    from asgiref.sync import sync_to_async

    events = [e async for e in TurnEvent.objects.filter(turn=turn).order_by("seq")]
    return await sync_to_async(render_turn)(turn, events)


async def test_a_stream_cut_off_twice_fails_keeping_the_partial_answer(make_session, run_turn, model):
    session = await make_session()
    model.reply("Here is the first half of", cut_off=True)
    model.reply("Here is the first half of", cut_off=True)
    turn = await run_turn(session, "Tell me")
    assert turn.status == "failed" and "cut off before it finished" in turn.error
    assert turn.answer == "Here is the first half of"  # kept, as a failed turn's partial answer
    assert model.calls == 2
    assert "model.retry" in await event_types(turn)


async def test_a_stream_cut_off_once_is_asked_again_and_completes(make_session, run_turn, model):
    session = await make_session()
    model.reply("Half an ans", cut_off=True)
    model.reply("The whole answer.")
    turn = await run_turn(session, "Tell me")
    assert turn.status == "completed" and turn.answer == "The whole answer."
    html = await page_of(turn)
    assert "Half an ans" not in html


async def test_reasoning_is_shown_apart_and_not_sent_back(make_session, run_turn, model):
    session = await make_session()
    model.reply("42.", reasoning="Let me think: six times seven.")
    turn = await run_turn(session, "Six times seven?")
    assert turn.answer == "42."
    html = await page_of(turn)
    assert "<summary>Reasoning</summary>" in html and "six times seven" in html
    model.reply("Yes.")
    await run_turn(turn.session, "Sure?")
    assert all("six times seven" not in (m.get("content") or "") for m in model.last_messages)


async def test_a_server_that_refuses_tools_runs_the_turn_without_them(make_session, run_turn, model):
    session = await make_session()
    model.reply("Answered without tools.", reject_tools=True)
    turn = await run_turn(session, "Hi")
    assert turn.status == "completed" and turn.answer == "Answered without tools."
    assert "tools" not in model.last_request
    assert escape(NOTICE_TOOLS_DROPPED) in await page_of(turn)


async def test_the_output_limit_and_estimated_usage_are_said(make_session, run_turn, model):
    session = await make_session()
    model.reply("A long answer that stops mid", finish_reason="length", no_usage=True)
    turn = await run_turn(session, "Write a lot")
    assert turn.status == "completed" and turn.answer == "A long answer that stops mid"
    [message] = await events_of(turn, "model.message")
    assert message["truncated"] is True and message["usage_estimated"] is True
    assert turn.prompt_tokens > 0 and turn.completion_tokens > 0
    html = await page_of(turn)
    assert escape(NOTICE_TRUNCATED) in html and "(estimated)" in html
