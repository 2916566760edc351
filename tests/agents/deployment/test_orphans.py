"""Turns nothing runs any more are ended, so they never lock a session: in one process a turn open
without a task; with workers (REDIS_URL) a running turn whose heartbeat stopped, or a queued one no
worker took. Each ends `failed` with a `turn.failed` event that says why."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from agents.models import Turn
from agents.run.claims import lease
from agents.run.runners import LocalRunner, WorkerRunner
from agents.runner import use_runner
from agents.sessions import session_create
from agents.turns import ERROR_INTERRUPTED, ERROR_NO_WORKER, turn_start
from agents.turns import turn_end_orphans as end_orphans

pytestmark = pytest.mark.django_db


@pytest.fixture
def session(team_a, alice):
    return session_create(team=team_a, user=alice)


@pytest.fixture
def workers():
    """This process hands turns to worker processes (it holds none of their runs)."""
    with use_runner(WorkerRunner()) as runner:
        yield runner


@pytest.fixture
def one_process():
    with use_runner(LocalRunner()) as runner:
        yield runner


def _turn(session, index, status, **fields):
    return Turn.objects.create(
        session=session, index=index, user_message=f"turn {index}", mode=session.mode, status=status, **fields
    )


def test_with_workers_a_running_turn_lives_while_its_heartbeat_does(session, workers):
    now = timezone.now()
    alive = _turn(
        session,
        1,
        Turn.Status.RUNNING,
        started_at=now - timedelta(hours=1),
        heartbeat_at=now - lease() + timedelta(seconds=5),
    )
    assert end_orphans(session) == []
    alive.refresh_from_db()
    assert alive.status == Turn.Status.RUNNING

    Turn.objects.filter(pk=alive.pk).update(heartbeat_at=now - lease() - timedelta(seconds=1))
    assert end_orphans(session) == [alive.pk]
    alive.refresh_from_db()
    assert (alive.status, alive.error) == (Turn.Status.FAILED, ERROR_INTERRUPTED)
    assert alive.finished_at is not None and alive.response_mode == session.mode
    event = alive.events.get()
    assert event.type == "turn.failed" and event.seq == 1 and event.payload["error"] == ERROR_INTERRUPTED


def test_with_workers_a_claimed_turn_lives_while_its_lease_does_and_the_sweep_reads_only_candidates(session, workers):
    """A worker's claim (lease_until) decides, whatever the heartbeat says; and the sweep every process
    runs every heartbeat fetches only the turns it may end, not every open one."""
    now = timezone.now()
    old = now - timedelta(hours=1)
    claimed = _turn(session, 1, Turn.Status.RUNNING, started_at=old, heartbeat_at=old, lease_until=now + lease())
    assert end_orphans() == []
    assert runner_candidates(workers, now) == []

    Turn.objects.filter(pk=claimed.pk).update(lease_until=now - timedelta(seconds=1), heartbeat_at=now)
    assert [t.pk for t in runner_candidates(workers, now)] == [claimed.pk]
    assert end_orphans(session) == [claimed.pk]
    claimed.refresh_from_db()
    assert (claimed.status, claimed.error) == (Turn.Status.FAILED, ERROR_INTERRUPTED)


def runner_candidates(runner, now):
    return list(
        runner.orphan_candidates(Turn.objects.filter(status__in=[Turn.Status.QUEUED, Turn.Status.RUNNING]), now)
    )


def test_with_workers_a_turn_queued_for_a_minute_says_no_worker_took_it(session, workers):
    fresh = _turn(session, 1, Turn.Status.QUEUED)
    assert end_orphans(session) == []  # just dispatched: a worker may be taking it right now
    Turn.objects.filter(pk=fresh.pk).update(created_at=timezone.now() - timedelta(minutes=2))
    assert end_orphans(session) == [fresh.pk]
    fresh.refresh_from_db()
    assert fresh.status == Turn.Status.FAILED and fresh.error == ERROR_NO_WORKER


def test_in_one_process_a_running_turn_without_a_task_is_ended_at_once(session, one_process):
    orphan = _turn(session, 1, Turn.Status.RUNNING, heartbeat_at=timezone.now())  # fresh, but no task here
    assert end_orphans(session) == [orphan.pk]
    orphan.refresh_from_db()
    assert orphan.status == Turn.Status.FAILED and orphan.error == ERROR_INTERRUPTED
    # ...and the next message starts a turn instead of "a turn is still running".
    assert turn_start(session=session, text="again").index == 2


def test_finished_and_waiting_turns_are_left_alone(session, workers):
    old = timezone.now() - timedelta(days=1)
    done = _turn(session, 1, Turn.Status.COMPLETED, finished_at=old)
    waiting = _turn(session, 2, Turn.Status.REQUIRES_ACTION, started_at=old, heartbeat_at=old)
    assert end_orphans(session) == []
    assert {t.status for t in Turn.objects.filter(pk__in=[done.pk, waiting.pk])} == {"completed", "requires_action"}
