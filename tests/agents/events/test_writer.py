"""The events thread writes the batches of every turn handed over meanwhile in one transaction
(twenty turns starting at once used to queue twenty commits before each first token), in few
statements; a batch that cannot be written (a duplicate seq) fails its own turn only. A reply's
first delta is handed over without waiting for the turn's batch in flight."""

from __future__ import annotations

import asyncio
import threading

import pytest
from asgiref.sync import sync_to_async
from django.db import IntegrityError, connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from agents.events import EventRecorder, writer
from agents.models import Turn, TurnEvent
from agents.sessions import session_create
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
    await writer.submit_events(bad.id, [_event(bad, 1, "kept")], None)

    # Hold the events thread so that both batches wait for it and are taken together.
    hold, holding = threading.Event(), threading.Event()
    blocker = writer._executor.submit(lambda: (holding.set(), hold.wait(10)))
    await asyncio.to_thread(holding.wait, 10)
    writes = [
        asyncio.ensure_future(writer.submit_events(good.id, [_event(good, 1, "a"), _event(good, 2, "b")], None)),
        asyncio.ensure_future(writer.submit_events(bad.id, [_event(bad, 1, "again")], None)),  # seq 1 exists
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
    await writer.submit_events(turn.id, [_event(turn, 1, "x")], None)
    with pytest.raises(IntegrityError):
        await writer.submit_events(turn.id, [_event(turn, 1, "y")], None)
    await writer.submit_events(turn.id, [_event(turn, 2, "z")], None)  # the thread's connection recovered
    assert await _stored(turn) == [(1, "x"), (2, "z")]


class _HeldThread:
    """Holds the events thread (its one worker) until `release()`: what is handed over meanwhile waits."""

    def __init__(self) -> None:
        self.hold, self.holding = threading.Event(), threading.Event()
        self.blocker = writer._executor.submit(lambda: (self.holding.set(), self.hold.wait(10)))

    async def __aenter__(self) -> _HeldThread:
        await asyncio.to_thread(self.holding.wait, 10)
        return self

    async def release(self) -> None:
        self.hold.set()
        await asyncio.wrap_future(self.blocker)

    async def __aexit__(self, *exc: object) -> None:
        await self.release()


class _CheckingLayer:
    """A channel layer that records, at each broadcast, the events and whether the database has them."""

    def __init__(self) -> None:
        self.sent: list[tuple[int, str, bool]] = []
        self.done = asyncio.Event()

    async def group_send(self, group: str, message: dict) -> None:
        if group.startswith("session_news_"):  # the same events again, for waiters (test_channel.py)
            return
        for event in message["events"]:
            stored = await TurnEvent.objects.filter(turn_id=message["turn_id"], seq=event["seq"]).aexists()
            self.sent.append((event["seq"], event["event"], stored))
            if event["event"] == "model.delta":
                self.done.set()


async def test_a_replys_first_delta_goes_to_the_thread_while_the_batch_before_it_is_written(make_session):
    """The first token when 20 streams start at once: the first delta used to wait until the turn's start
    batch was written and back on the event loop before it was even handed to the events thread."""
    session = await make_session()
    turn = await sync_to_async(turn_start)(session=session, text="Hi")
    layer = _CheckingLayer()
    recorder = EventRecorder(turn, channel_layer=layer)
    async with _HeldThread() as held:
        await recorder.emit(
            "turn.started",
            {"mode": "general", "execution": "ask", "model": "test", "max_steps": 1, "tool_kinds": {}},
            defer=True,
        )
        await recorder.emit(
            "step.started",
            {"step": 1, "max_steps": None, "mode": "general", "messages_from": 0, "messages": [], "tools": []},
        )
        await asyncio.sleep(0)  # the writer task hands the start batch over
        await recorder.delta("Hel")
        # Both batches wait for the thread (the delta's is not held back behind the start's)...
        assert [[e.type for e in job.events] for job in writer._pending.jobs] == [
            ["turn.started", "step.started"],
            ["model.delta"],
        ]
        await held.release()
        await asyncio.wait_for(layer.done.wait(), 10)
    await recorder.drain()
    # ...and each is broadcast once written, in seq order.
    assert layer.sent == [(1, "turn.started", True), (2, "step.started", True), (3, "model.delta", True)]


def test_a_group_of_batches_is_one_insert_without_savepoints(team_a, alice):
    """Each statement costs the events thread a GIL hand-over, which under load waits up to a
    switch interval: a group of turns' batches is their turns' UPDATEs and one INSERT."""
    sessions = [session_create(team=team_a, user=alice) for _ in range(2)]
    turns = [turn_start(session=session, text="Hi") for session in sessions]
    loop = asyncio.new_event_loop()
    try:
        jobs = [
            writer._Job(
                turn.id,
                [_event(turn, 1, "a"), _event(turn, 2, "b")],
                writer.TurnWrite(fields={"step_count": 1}),
                loop,
                loop.create_future(),
            )
            for turn in turns
        ]
        with CaptureQueriesContext(connection) as queries:
            assert writer._write_jobs(jobs) == [None, None]
    finally:
        loop.close()
    statements = [q["sql"].split()[0].upper() for q in queries.captured_queries]
    assert statements.count("INSERT") == 1 and statements.count("UPDATE") == 2, statements
    assert not [q for q in queries.captured_queries if "SAVEPOINT" in q["sql"].upper()]
    assert [sorted(TurnEvent.objects.filter(turn=t).values_list("seq", flat=True)) for t in turns] == [[1, 2], [1, 2]]
    assert [t.step_count for t in Turn.objects.filter(pk__in=[t.pk for t in turns])] == [1, 1]


def test_a_group_updates_its_turns_in_turn_id_order(team_a, alice):
    """The lease renewal locks a process's turns in id order (run/leases.py); the writer's group, handed
    batches in any order, updates the turns in that order too: in two orders the two transactions
    deadlocked under 100 runs at once (the scale-out bench logged PostgreSQL's "deadlock detected")."""
    sessions = [session_create(team=team_a, user=alice) for _ in range(3)]
    turns = sorted((turn_start(session=session, text="Hi") for session in sessions), key=lambda t: t.id, reverse=True)
    loop = asyncio.new_event_loop()
    try:
        jobs = [
            writer._Job(
                turn.id, [_event(turn, 1, "a")], writer.TurnWrite(fields={"step_count": 1}), loop, loop.create_future()
            )
            for turn in turns  # the highest id first
        ]
        with CaptureQueriesContext(connection) as queries:
            assert writer._write_jobs(jobs) == [None, None, None]
    finally:
        loop.close()
    updated = [
        t.id
        for q in queries.captured_queries
        if q["sql"].upper().startswith("UPDATE")
        for t in turns
        if t.id in q["sql"]
    ]
    assert updated == sorted(t.id for t in turns)
