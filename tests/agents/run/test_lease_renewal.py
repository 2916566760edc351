"""The runs a process holds are kept alive together (agents/run/leases.py): one UPDATE renews every
held claim, one SELECT finds the runs a Stop asked to cancel. A renewal that fails stops the run (the
claim went to another worker, or the turn was ended elsewhere) — but not a run that wrote its turn's
end itself and is still broadcasting its last events. The scale-out bench showed that race under
load: the renewal came between the final write and its broadcast, the run was cancelled ("lost its
claim"), and the sockets never got the turn's final event."""

from __future__ import annotations

import asyncio
import logging
import re

import pytest
from asgiref.sync import sync_to_async
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from agents.models import Turn
from agents.run.leases import Leases, _renew_all
from agents.sessions import session_create
from agents.turns import turn_start
from tests.helpers import async_db

WORKER = "worker-a"


async def _finished_turn_held_by_worker(make_session) -> str:
    session = await make_session()
    turn = await sync_to_async(turn_start)(session=session, text="Hi")
    await Turn.objects.filter(pk=turn.id).aupdate(
        worker=WORKER, status=Turn.Status.COMPLETED, finished_at=timezone.now(), answer="Done."
    )
    return turn.id


async def _renew_once(turn_id: str, ended: bool) -> asyncio.Task:
    """A heartbeat for a run still busy (broadcasting), against the finished turn; the run's task."""
    busy = asyncio.create_task(asyncio.sleep(30))
    leases = Leases(polls_cancel=True)
    leases.hold(turn_id, busy, WORKER, lambda: ended)
    await leases.beat()
    await asyncio.sleep(0)  # a cancel is delivered at the task's next step
    return busy


@async_db
async def test_a_run_that_wrote_its_own_end_is_not_stopped_by_the_failed_renewal(make_session, caplog):
    turn_id = await _finished_turn_held_by_worker(make_session)
    with caplog.at_level(logging.WARNING, logger="aptix.runs"):
        busy = await _renew_once(turn_id, ended=True)
    assert not busy.done()  # left to finish its broadcast
    assert not [r for r in caplog.records if "lost its claim" in r.getMessage()]
    busy.cancel()


@async_db
async def test_a_stop_after_the_run_wrote_its_own_end_does_not_cancel_it(make_session):
    """A Stop that lands while a worker's run broadcasts the end it wrote (the turn completed) must not
    cancel that run: cancelled, it wrote a second end, turn.cancelled after turn.completed (the
    decision/cancel race test on workers caught it under load)."""
    turn_id = await _finished_turn_held_by_worker(make_session)
    await Turn.objects.filter(pk=turn_id).aupdate(cancel_requested=True)
    for ended in (True, False):  # whether the run knows it wrote the end, or only the row says so
        busy = asyncio.create_task(asyncio.sleep(30))
        leases = Leases(polls_cancel=True)
        leases.hold(turn_id, busy, WORKER, lambda ended=ended: ended)
        await leases.poll_cancels()
        await asyncio.sleep(0)
        assert not busy.done()
        busy.cancel()


@async_db
async def test_a_run_whose_turn_ended_elsewhere_is_stopped(make_session, caplog):
    turn_id = await _finished_turn_held_by_worker(make_session)
    with caplog.at_level(logging.WARNING, logger="aptix.runs"):
        busy = await _renew_once(turn_id, ended=False)
    assert busy.cancelled()
    assert [r for r in caplog.records if "lost its claim" in r.getMessage()]


@async_db
async def test_one_heartbeat_renews_every_held_claim_and_one_look_finds_the_cancels(make_session):
    turns = [await sync_to_async(turn_start)(session=await make_session(), text=f"Hi {i}") for i in range(3)]
    await Turn.objects.filter(pk__in=[t.id for t in turns]).aupdate(worker=WORKER, status=Turn.Status.RUNNING)
    await Turn.objects.filter(pk=turns[2].id).aupdate(cancel_requested=True)
    runs = [asyncio.create_task(asyncio.sleep(30)) for _ in turns]
    leases = Leases(polls_cancel=True)
    for turn, run in zip(turns, runs, strict=True):
        leases.hold(turn.id, run, WORKER)
    before = timezone.now()
    await leases.beat()
    await leases.poll_cancels()
    await asyncio.sleep(0)
    renewed = [t async for t in Turn.objects.filter(pk__in=[t.id for t in turns])]
    assert all(t.lease_until > before and t.heartbeat_at >= before for t in renewed)
    assert [run.cancelled() for run in runs] == [False, False, True]
    for run in runs[:2]:
        run.cancel()


@pytest.mark.django_db
def test_a_renewal_locks_its_turns_in_turn_id_order_before_updating_them(team_a, alice):
    """As the event writer's groups do (events/writer.py): on PostgreSQL a multi-row UPDATE locks rows
    in whatever order it scans them, and against a writer's transaction in another order the two
    deadlocked (the scale-out bench: "Renewing the runs' leases failed … deadlock detected")."""
    if connection.vendor != "postgresql":
        pytest.skip("row locks: PostgreSQL (make test runs it)")
    turns = [turn_start(session=session_create(team=team_a, user=alice), text="Hi") for _ in range(3)]
    Turn.objects.filter(pk__in=[t.id for t in turns]).update(worker=WORKER, status=Turn.Status.RUNNING)
    with CaptureQueriesContext(connection) as queries:
        assert _renew_all({t.id: WORKER for t in turns}) == set()
    sql = [q["sql"].upper() for q in queries.captured_queries]
    lock = next(i for i, s in enumerate(sql) if "FOR UPDATE" in s)
    update = next(i for i, s in enumerate(sql) if s.startswith("UPDATE"))
    assert lock < update and re.search(r'ORDER BY (1|"AGENTS_TURN"\."ID") ASC FOR UPDATE', sql[lock]), sql[lock]
