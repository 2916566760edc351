"""Edit and resend, retry, regenerate: a message sent again is a new turn in the
session's persisted mode (AGN-011 §3.3); the turns it replaces stay (audit) but leave the conversation
the model sees; nothing is rewritten silently and bad requests write nothing."""

from __future__ import annotations

import json

import pytest
from asgiref.sync import sync_to_async
from django.core.exceptions import ValidationError
from django.test import override_settings
from django.urls import reverse

from agents.conversations import (
    ERROR_NO_TURN,
    ERROR_NOT_LAST,
    ERROR_NOT_REGENERABLE,
    ERROR_NOT_RETRYABLE,
    turn_resend,
)
from agents.models import Turn
from agents.run.reasoner import Reasoner
from agents.runner import get_runner
from agents.sessions import session_manager
from agents.turns import ERROR_EMPTY_MESSAGE, ERROR_TURN_RUNNING, turn_start
from modes.models import ModeHistory
from tests.helpers import ServerLikeAsyncClient, async_db

pytestmark = async_db
NO_LIMITS = {"APTIX_RATE_TURNS": None, "APTIX_RATE_API": None, "APTIX_RATE_BAD_TOKENS": None}
resend = sync_to_async(turn_resend)


def chat(messages: list[dict]) -> list[tuple[str, str]]:
    return [(m["role"], m["content"]) for m in messages if m["role"] in ("user", "assistant")]


async def refused(reason: str, **kwargs) -> None:
    with pytest.raises(ValidationError) as caught:
        await resend(**kwargs)
    assert reason in caught.value.messages


async def test_an_edit_replaces_that_turn_and_the_later_ones_and_the_model_sees_only_the_edit(
    llm, model, make_session, run_turn
):
    session = await make_session()
    for text in ["a", "b", "c"]:
        model.reply(f"answer {text}")
        await run_turn(session, text=f"question {text}")
    _, second, third = [t async for t in Turn.objects.filter(session=session).order_by("index")]

    edited = await resend(session=session, turn_id=second.id, kind="edit", text="question B, better")
    assert (edited.index, edited.origin, edited.user_message, edited.status) == (
        4,
        "edit",
        "question B, better",
        "queued",
    )
    rows = {t.index: t async for t in Turn.objects.filter(session=session)}
    assert [rows[i].replaced_by_id for i in (1, 2, 3)] == [None, edited.id, edited.id]
    assert (rows[2].answer, rows[3].answer, rows[3].status) == (
        "answer b",
        "answer c",
        "completed",
    )  # kept as they were

    model.reply("answer B")
    await Reasoner(llm=llm).run(edited.id)
    assert chat(model.last_messages) == [
        ("user", "question a"),
        ("assistant", "answer a"),
        ("user", "question B, better"),
    ]
    await refused(ERROR_NO_TURN, session=session, turn_id=third.id, kind="edit", text="again")  # replaced already


async def test_a_resent_turn_runs_in_the_persisted_mode_and_the_mode_history_stays(llm, model, make_session, run_turn):
    session = await make_session(mode="general")
    model.reply("Hi.")
    first = await run_turn(session, text="Hello")
    await sync_to_async(session_manager.set_session_mode_sync)(
        session.id, "data-analysis", "Switched by the user", session.team, session.user, source="user"
    )
    edited = await resend(session=session, turn_id=first.id, kind="edit", text="Hello again")
    assert (first.mode, edited.mode) == ("general", "data-analysis")  # AGN-011: the session's mode, not the old turn's
    await session.arefresh_from_db()
    assert session.mode == "data-analysis"
    history = [(h.previous_mode, h.new_mode, h.source) async for h in ModeHistory.objects.filter(session=session)]
    assert history == [("general", "data-analysis", "user")]  # nothing rolled back or rewritten


async def test_retry_a_failed_turn(llm, model, make_session, run_turn):
    session = await make_session()
    model.error(500, "The model server fell over.")
    failed = await run_turn(session, text="Try this")
    assert failed.status == Turn.Status.FAILED
    await refused(ERROR_NOT_REGENERABLE, session=session, turn_id=failed.id, kind="regenerate")

    retried = await resend(session=session, turn_id=failed.id, kind="retry")
    assert (retried.user_message, retried.origin, retried.index) == ("Try this", "retry", 2)
    model.reply("Worked this time.")
    done = await Reasoner(llm=llm).run(retried.id)
    assert done.status == Turn.Status.COMPLETED
    await failed.arefresh_from_db()
    assert (failed.status, failed.replaced_by_id) == (Turn.Status.FAILED, retried.id)  # the failure stays on record
    await refused(ERROR_NOT_RETRYABLE, session=session, turn_id=retried.id, kind="retry")


async def test_regenerate_the_last_answer_only(llm, model, make_session, run_turn):
    session = await make_session()
    model.reply("Paris.")
    first = await run_turn(session, text="Capital of France?")
    model.reply("Berlin.")
    second = await run_turn(session, text="And Germany?")
    await refused(ERROR_NOT_LAST, session=session, turn_id=first.id, kind="regenerate")

    again = await resend(session=session, turn_id=second.id, kind="regenerate")
    model.reply("Berlin, since 1990.")
    await Reasoner(llm=llm).run(again.id)
    assert chat(model.last_messages) == [
        ("user", "Capital of France?"),
        ("assistant", "Paris."),
        ("user", "And Germany?"),
    ]
    await refused("Send again as 'edit', 'retry' or 'regenerate'.", session=session, turn_id=again.id, kind="redo")


async def test_nothing_is_written_while_a_turn_runs_or_for_an_empty_edit(llm, model, make_session, run_turn):
    session = await make_session()
    model.reply("One.")
    first = await run_turn(session, text="One?")
    running = await sync_to_async(turn_start)(session=session, text="Two?")  # queued: the session is busy
    await refused(ERROR_TURN_RUNNING, session=session, turn_id=first.id, kind="edit", text="One, edited")
    await refused(ERROR_EMPTY_MESSAGE, session=session, turn_id=first.id, kind="edit", text="   ")
    assert await Turn.objects.filter(session=session).acount() == 2
    assert not await Turn.objects.filter(session=session, replaced_by__isnull=False).aexists()
    await Turn.objects.filter(pk=running.pk).aupdate(status=Turn.Status.CANCELLED)


@override_settings(**NO_LIMITS)
async def test_the_buttons_resend_only_the_owners_turns(llm, model, make_session, run_turn, alice, bob, password):
    session = await make_session()
    model.reply("Hi.")
    first = await run_turn(session, text="Hello")
    url = reverse("turn-resend", args=[session.id, first.id])
    assert (await ServerLikeAsyncClient().post(url, {"kind": "regenerate"})).status_code == 401
    bobs = ServerLikeAsyncClient()
    await sync_to_async(bobs.login)(username=bob.username, password=password)
    assert (await bobs.post(url, {"kind": "regenerate"})).status_code == 404  # same team, not his session

    client = ServerLikeAsyncClient()
    await sync_to_async(client.login)(username=alice.username, password=password)
    response = await client.post(url, {"kind": "edit", "message": ""})
    assert response.status_code == 422 and ERROR_EMPTY_MESSAGE in response.content.decode()
    assert await Turn.objects.filter(session=session).acount() == 1

    model.reply("Hello there.")
    response = await client.post(url, {"kind": "regenerate"})
    html = response.content.decode()
    new = await Turn.objects.aget(session=session, index=2)
    assert response.status_code == 200 and f'id="turn-{new.id}"' in html and 'id="composer"' in html
    # the old turn leaves the timeline out of band: it is the message's first version now
    assert f'<div id="turn-{first.id}" hx-swap-oob="delete"></div>' in html
    assert '<span class="visually-hidden">Version 2 of 2</span>' in html
    done = await get_runner().wait(new.id)
    assert (done.status, done.answer, done.origin) == ("completed", "Hello there.", "regenerate")

    page = (await client.get(reverse("session-detail", args=[session.id]))).content.decode()
    assert page.count('class="edit-message"') == 1  # the replaced turn offers no Edit
    assert page.count('<form class="again"') == 1 and ">Regenerate</button>" in page
    assert "· regenerated" in page
    exported = await client.get(reverse("session-export", args=[session.id, "json"]))
    rows = [(t["index"], t["origin"], t["replacedBy"]) for t in json.loads(exported.content)["turns"]]
    assert rows == [(1, "message", 2), (2, "regenerate", None)]
    markdown = (await client.get(reverse("session-export", args=[session.id, "md"]))).content.decode()
    assert "_Replaced by turn 2: no longer part of the conversation._" in markdown


@override_settings(**{**NO_LIMITS, "APTIX_RATE_TURNS": "1/m"})
async def test_a_resend_counts_against_the_turn_rate(llm, model, make_session, run_turn, alice, password):
    session = await make_session()
    model.reply("Hi.")
    first = await run_turn(session, text="Hello")
    client = ServerLikeAsyncClient()
    await sync_to_async(client.login)(username=alice.username, password=password)
    url = reverse("turn-resend", args=[session.id, first.id])
    model.reply("Again.")
    ok = await client.post(url, {"kind": "regenerate"})
    assert ok.status_code == 200
    await get_runner().wait((await Turn.objects.aget(session=session, index=2)).id)
    limited = await client.post(
        reverse("turn-resend", args=[session.id, (await Turn.objects.aget(index=2)).id]), {"kind": "regenerate"}
    )
    assert limited.status_code == 429 and "Too many new messages" in limited.content.decode()
    assert await Turn.objects.filter(session=session).acount() == 2
