"""The events thread writes the batches of every turn handed over meanwhile in one transaction
(issue 17: twenty turns starting at once queued twenty commits before each first token); a batch
that cannot be written (a duplicate seq) fails its own turn only."""

from __future__ import annotations

import asyncio
import threading

import pytest
from asgiref.sync import sync_to_async
from django.db import IntegrityError
from django.utils import timezone

from agents.events import writer
from agents.models import TurnEvent
from agents.turns import turn_start
from tests.helpers import async_db

pytestmark = async_db


def _event(turn, seq: int, text: str) -> TurnEvent:
    return TurnEvent(turn_id=turn.id, seq=seq, type="model.delta", payload={"text": text}, created_at=timezone.now())


async def _stored(turn) -> list[tuple[int, str]]:
    rows = TurnEvent.objects.filter(turn_id=turn.id).order_by("seq")
    return [(e.seq, e.payload["text"]) async for e in rows]


async def test_batches_of_several_turns_go_together_and_a_bad_one_fails_alone(make_session):
    first, second = await make_session(), await make_session()
    good = await sync_to_async(turn_start)(session=first, text="Hi")
    bad = await sync_to_async(turn_start)(session=second, text="Hi")
    await writer.write_events(bad.id, [_event(bad, 1, "kept")], None)

    # Hold the events thread so that both batches wait for it and are taken together.
    hold, holding = threading.Event(), threading.Event()
    blocker = writer._executor.submit(lambda: (holding.set(), hold.wait(10)))
    await asyncio.to_thread(holding.wait, 10)
    writes = [
        asyncio.ensure_future(writer.write_events(good.id, [_event(good, 1, "a"), _event(good, 2, "b")], None)),
        asyncio.ensure_future(writer.write_events(bad.id, [_event(bad, 1, "again")], None)),  # seq 1 exists
    ]
    await asyncio.sleep(0)  # both handed over while the thread is held
    assert len(writer._pending.jobs) == 2
    hold.set()
    await asyncio.wrap_future(blocker)
    results = await asyncio.gather(*writes, return_exceptions=True)

    assert results[0] is None
    assert isinstance(results[1], IntegrityError)
    assert await _stored(good) == [(1, "a"), (2, "b")]
    assert await _stored(bad) == [(1, "kept")]


async def test_a_lone_batch_is_written_as_before(make_session):
    session = await make_session()
    turn = await sync_to_async(turn_start)(session=session, text="Hi")
    await writer.write_events(turn.id, [_event(turn, 1, "x")], None)
    with pytest.raises(IntegrityError):
        await writer.write_events(turn.id, [_event(turn, 1, "y")], None)
    await writer.write_events(turn.id, [_event(turn, 2, "z")], None)  # the thread's connection recovered
    assert await _stored(turn) == [(1, "x"), (2, "z")]
