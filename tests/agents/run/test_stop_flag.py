"""A Stop on the embedded default (one process, LocalRunner) cancels the run's task at once, and the
cancel flag it writes is looked at as well, as a worker does: a cancel dropped on its way to the run
(a CI run once streamed a stopped turn to its end, the Stop's click made and nothing stopped) still
stops the run. Here the flag is set with no cancel of the task at all, as such a drop leaves it."""

from __future__ import annotations

import asyncio

from asgiref.sync import sync_to_async

from agents.models import Turn
from agents.runner import get_runner
from agents.turns import turn_start
from tests.helpers import async_db
from tests.helpers.events import event_types

pytestmark = async_db


async def test_a_running_turn_whose_cancel_flag_is_set_stops_without_its_task_being_cancelled(make_session, llm, model):
    session = await make_session(execution="ask")
    model.reply("slow " * 2000, chunk_delay=0.01)  # ~20 s unless stopped
    turn = await sync_to_async(turn_start)(session=session, text="go")
    runner = get_runner()
    assert runner.kind == "local"
    task = runner.start(turn.id)
    while not await Turn.objects.filter(pk=turn.id, events__type="model.delta").aexists():
        await asyncio.sleep(0.02)  # the reply is streaming
    await Turn.objects.filter(pk=turn.id).aupdate(cancel_requested=True)  # the flag alone, as a dropped cancel
    await asyncio.wait({task}, timeout=10)  # (not wait_for: its timeout would cancel the task itself)
    if not task.done():
        task.cancel()
        raise AssertionError("the run went on streaming with its turn's cancel flag set")
    turn = await Turn.objects.aget(pk=turn.id)
    assert turn.status == "cancelled"
    assert (await event_types(turn))[-1] == "turn.cancelled"
    assert turn.answer.startswith("slow ") and len(turn.answer) < len("slow " * 2000)  # the partial answer
