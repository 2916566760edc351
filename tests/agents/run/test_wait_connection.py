"""A request waiting for its turn (the JSON API waits until the turn ends) holds no database
connection while it waits: with a pool of 10 connections, a web process served 9 waiting API calls at
a time and queued the rest for a connection before their turns were even recorded."""

from __future__ import annotations

import asyncio
from functools import partial

from asgiref.sync import ThreadSensitiveContext, sync_to_async
from channels.layers import get_channel_layer
from django.db import connection

from agents.events import session_news_group
from agents.models import AgentSession, Turn
from agents.run.asking import waiting_questions
from agents.run.runners import LocalRunner, WorkerRunner
from agents.turns import turn_start
from tests.helpers import async_db


def _holds_connection() -> bool:
    return connection.connection is not None


def _query() -> int:
    return AgentSession.objects.count()


async def _until_released(limit: int = 500) -> bool:
    """Whether this request's thread lets go of its connection (the waiter runs on the same thread)."""
    for _ in range(limit):
        if not await sync_to_async(_holds_connection)():
            return True
        await asyncio.sleep(0.01)
    return False


@async_db
async def test_the_local_runner_waits_without_a_connection(make_session):
    session = await make_session()
    turn = await sync_to_async(partial(turn_start, session=session, text="Hello"))()
    async with ThreadSensitiveContext():  # one request: its sync code runs on one thread of its own
        await sync_to_async(_query)()
        assert await sync_to_async(_holds_connection)()
        run = asyncio.get_running_loop().create_future()
        waiting = asyncio.ensure_future(LocalRunner().wait(turn.id, run))
        assert await _until_released()
        run.set_result(None)
        assert (await waiting).id == turn.id  # and it reads the turn again afterwards


@async_db
async def test_a_question_asked_here_ends_the_local_runners_wait_at_once(make_session):
    """The request hears of its run's MCP server question from the run (asking.py WaitingQuestions), not
    by looking at the turn every half second: each look was a query, and with 100 API turns waiting at
    once on one process those were 12% of its CPU. A question asked before the wait began counts too."""
    session = await make_session()
    turn = await sync_to_async(partial(turn_start, session=session, text="Hello"))()
    run = asyncio.get_running_loop().create_future()
    waiting = asyncio.ensure_future(LocalRunner().wait(turn.id, run))
    await asyncio.sleep(0.05)
    assert not waiting.done()  # the run goes on, and nothing asked
    waiting_questions.asked(turn.id)
    try:
        assert (await asyncio.wait_for(waiting, 10)).id == turn.id
        assert not run.done()  # the run waits for the answer; the request answered with the pause
        again = await asyncio.wait_for(LocalRunner().wait(turn.id, run), 10)  # asked before this wait
        assert again.id == turn.id
    finally:
        waiting_questions.answered(turn.id)
        run.cancel()


@async_db
async def test_the_worker_runner_waits_without_a_connection(make_session, settings):
    settings.CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}
    session = await make_session()
    turn = await sync_to_async(partial(turn_start, session=session, text="Hello"))()
    async with ThreadSensitiveContext():
        await sync_to_async(_query)()
        dispatched = asyncio.get_running_loop().create_future()
        dispatched.set_result(0)
        waiting = asyncio.ensure_future(WorkerRunner().wait(turn.id, dispatched))
        assert await _until_released()
        await Turn.objects.filter(pk=turn.id).aupdate(status=Turn.Status.COMPLETED)
        message = {
            "type": "turn.events",
            "session_id": session.id,
            "turn_id": turn.id,
            "events": [{"event": "turn.completed", "seq": 1, "payload": {}}],
        }
        await get_channel_layer().group_send(session_news_group(session.id), message)
        assert (await asyncio.wait_for(waiting, 30)).id == turn.id
