"""The writer's switch for tests (agents.events.writer.db_threads_inline): off, batches are written
on the events thread; on, on asgiref's sync thread, inside the caller's (the test's) transaction."""

from __future__ import annotations

import threading

from asgiref.sync import sync_to_async
from django.utils import timezone

from agents.events import writer
from agents.models import TurnEvent
from agents.turns import turn_start
from tests.helpers import inline_db


async def test_off_the_events_thread_writes_on_the_sync_thread(monkeypatch):
    """(Not inline_db, which turns the switch on for the whole test.)"""
    threads: list[str] = []
    record = lambda *args: threads.append(threading.current_thread().name)  # noqa: E731
    monkeypatch.setattr(writer, "_write_batch", record)  # the events thread's write
    monkeypatch.setattr(writer, "_write_inline", record)  # the inline one (the next test writes for real)
    await writer.submit_events("turn", [], None)
    with writer.db_threads_inline():
        await writer.submit_events("turn", [], None)
    await writer.submit_events("turn", [], None)  # off again after the block
    sync_thread = await sync_to_async(lambda: threading.current_thread().name)()
    assert threads[0].startswith("aptix-events") and threads[2].startswith("aptix-events")
    assert threads[1] == sync_thread


@inline_db
async def test_inline_a_batch_is_in_the_tests_transaction(make_session):
    """The test's transaction is never committed, so a row read back proves the write shared it."""
    session = await make_session()
    turn = await sync_to_async(turn_start)(session=session, text="Hi")
    seq = await TurnEvent.objects.filter(turn=turn).acount() + 1
    event = TurnEvent(turn_id=turn.id, seq=seq, type="turn.started", payload={}, created_at=timezone.now())
    await writer.submit_events(turn.id, [event], None)
    assert await TurnEvent.objects.filter(turn=turn, seq=seq).aexists()
