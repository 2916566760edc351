"""The automations' clock, kept by every process that runs turns (the process serving the ASGI app in
the embedded default; each `aptix_worker` with Redis): every APTIX_AUTOMATIONS_TICK seconds it

1. claims the scheduled times that are due (a row per time: of several processes looking at once,
   one inserts it, the others meet the unique constraint) and begins their runs on this process's
   runner (a task here, or the run queue with workers);
2. begins the retries whose backoff passed, and the queued runs whose automation is free again;
3. follows the runs under way (runs.py `run_follow`): approvals to the inbox, timeouts, endings.

A time is due once it is past; one that passed more than LATE ago (everything was down) is *missed*:
it runs once at start-up with `catch_up`, else it is recorded as skipped. Earlier missed times of the
same automation are not run again: catch-up runs once."""

from __future__ import annotations

import asyncio
import contextvars
import logging
from datetime import datetime, timedelta

from asgiref.sync import sync_to_async
from django.conf import settings
from django.db import close_old_connections
from django.utils import timezone

from agents.runner import get_runner

from .models import Automation, AutomationRun
from .runs import retries_due, run_begin, run_claim, run_follow, runs_open, runs_waiting_to_begin
from .schedule import latest_time
from .services import first_time

logger = logging.getLogger("aptix.automations")
LATE = timedelta(minutes=2)  # a due time older than this when first seen was missed (nothing was running)


def due_time(automation: Automation, now: datetime) -> datetime | None:
    """The latest of the automation's times from its `next_run_at` up to now, or None if none is due."""
    start = automation.next_run_at
    if start is None or start > now:
        return None
    times = []
    if automation.cron:
        times.append(latest_time(automation.cron, automation.timezone, now))
    if automation.run_at and start <= automation.run_at <= now:
        times.append(automation.run_at)
    due = [t for t in times if t >= start]
    return max(due) if due else start


def claim_due(now: datetime) -> list[AutomationRun]:
    """Claim every due scheduled time (one run each, missed ones once) and move each automation's
    `next_run_at` on. Answers the claimed runs to begin."""
    claimed = []
    for automation in Automation.objects.filter(enabled=True, next_run_at__lte=now).select_related("owner"):
        at = due_time(automation, now)
        following = first_time(automation, now)
        # Move on first, from the time this process read: of two processes, one moves it, both claim
        # the same time, one claim wins.
        Automation.objects.filter(pk=automation.pk, next_run_at=automation.next_run_at).update(next_run_at=following)
        if at is None:
            continue
        run = run_claim(automation, trigger=AutomationRun.Trigger.SCHEDULE, scheduled_for=at, missed=now - at > LATE)
        if run is not None and run.status == AutomationRun.Status.QUEUED:
            claimed.append(run)
    return claimed


def tick_sync(now: datetime | None = None) -> list[str]:
    """One look (sync, on a worker thread): the turns to dispatch."""
    now = now or timezone.now()
    turns = []
    for run in [*claim_due(now), *retries_due(now), *runs_waiting_to_begin()]:
        turn = run_begin(run)
        if turn is not None:
            turns.append(turn.pk)
    for run in runs_open():
        try:
            run_follow(run, now=now)
        except Exception:  # one run's trouble must not stop the others being followed
            logger.exception("Following automation run %s failed", run.pk)
    return turns


async def tick(now: datetime | None = None) -> list[str]:
    """One look, then the begun runs dispatched on this process's runner. Answers their turn ids."""
    turn_ids = await sync_to_async(tick_sync)(now)
    runner = get_runner()
    for turn_id in turn_ids:
        runner.start(turn_id)
    return turn_ids


_clock: asyncio.Task | None = None


def start_automations() -> None:
    """Start-up hook (aptix/asgi.py): keep the schedule here when this process runs turns — without
    Redis, the process serving the app; with Redis, the workers only (agents/run/worker.py)."""
    global _clock  # noqa: PLW0603 - one per process
    if not settings.APTIX_AUTOMATIONS or (_clock is not None and not _clock.done()):
        return
    if settings.REDIS_URL and not worker_process():
        return
    _clock = asyncio.get_running_loop().create_task(
        _tick_forever(settings.APTIX_AUTOMATIONS_TICK), name="automations-clock", context=contextvars.Context()
    )


def worker_process() -> bool:
    from agents.run.worker import serving

    return serving()


async def _tick_forever(interval: float) -> None:
    while True:
        try:
            await tick()
        except Exception:  # a database hiccup must not stop the clock
            logger.exception("The automations' tick failed; trying again in %s s", interval)
            await sync_to_async(close_old_connections)()
        await asyncio.sleep(interval)
