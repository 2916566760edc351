"""Exactly once per scheduled time, however many processes keep the schedule: 2 web processes and 2
workers (real subprocesses on the test PostgreSQL and Redis; the workers keep the clock) run a schedule
every five seconds for ten scheduled times while one worker is SIGKILLed and restarted in the middle.
Each time runs once (one attempt-1 run row per time, no time skipped between the first and the last),
each run as a turn of its own that asked the model once (a time that comes while the killed worker's
turn waits out its lease runs after it: overlap "queue"). (The same with a per-minute schedule over
ten minutes: bench/automations_schedule.py, which also prints how late runs start.)"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections import Counter
from datetime import timedelta

import pytest
from asgiref.sync import sync_to_async
from django.conf import settings as django_settings
from django.db import connection

from agents.models import Turn
from automations.models import AutomationRun
from automations.services import automation_create
from tests.helpers import async_db
from tests.helpers import deployment as multi
from tests.helpers.worker_process import REDIS_URL

pytestmark = [pytest.mark.slow, async_db]

CRON = "* * * * * */5"  # every five seconds (a sixth field: seconds)
PERIOD = timedelta(seconds=5)
TIMES = 10


async def scheduled_runs(automation_id: str) -> list[AutomationRun]:
    found = AutomationRun.objects.filter(automation_id=automation_id, trigger="schedule").order_by("scheduled_for")
    return [run async for run in found]


async def until_runs(automation_id: str, count: int, timeout: float) -> None:
    """Until the schedule has claimed `count` times (other processes write them: nothing to await)."""
    deadline = time.monotonic() + timeout
    while len({r.scheduled_for for r in await scheduled_runs(automation_id)}) < count:
        assert time.monotonic() < deadline, f"fewer than {count} scheduled times were claimed in {timeout} s"
        await asyncio.sleep(0.5)


async def test_a_schedule_runs_once_per_time_while_a_worker_is_killed(tmp_path, alice, team_a):
    if not REDIS_URL or connection.vendor != "postgresql":
        pytest.skip("needs Redis and PostgreSQL (make test starts both)")
    running = multi.deployment(
        tmp_path,
        redis_url=REDIS_URL,
        secret_key=django_settings.SECRET_KEY,
        heartbeat=2.0,
        APTIX_AUTOMATIONS_TICK="1",
        APTIX_AUTO_TITLES="false",
    )
    async with running as deployed:
        for _ in range(TIMES * 2):
            deployed.model.reply("Noted.")
        automation, _ = await sync_to_async(automation_create)(
            user=alice,
            team=team_a,
            # "queue": a time that comes while the killed worker's turn waits out its lease runs after
            # it ("skip", the default, would record it skipped: right for a schedule, not what this counts)
            data={"name": "Every 5 s", "prompt": "Tick at {time}", "schedule": {"cron": CRON}, "overlap": "queue"},
        )
        try:
            await until_runs(automation.pk, TIMES // 2, timeout=PERIOD.total_seconds() * TIMES)
            await deployed.workers[0].restart()  # SIGKILL, then a new one
            await until_runs(automation.pk, TIMES, timeout=PERIOD.total_seconds() * TIMES)
            deadline = time.monotonic() + 30
            while any(not run.is_final for run in await scheduled_runs(automation.pk)):
                assert time.monotonic() < deadline, "runs still open 30 s after the last time"
                await asyncio.sleep(0.5)
        finally:
            for log in deployed.logs():
                print(f"--- {log}:", *multi.warnings_in(log), sep="\n")

    runs = await scheduled_runs(automation.pk)
    firsts = [run for run in runs if run.attempt == 1]
    per_time = Counter(run.scheduled_for for run in firsts)
    assert per_time and set(per_time.values()) == {1}, per_time
    times = sorted(per_time)
    assert len(times) >= TIMES
    assert all(later - earlier == PERIOD for earlier, later in itertools.pairwise(times)), times
    turn_ids = [run.turn_id for run in runs]
    assert None not in turn_ids and len(set(turn_ids)) == len(runs)  # each run its own turn
    assert sum(run.status == "completed" for run in firsts) >= TIMES - 1  # a run the kill cut is retried
    turns = Turn.objects.filter(pk__in=turn_ids)
    assert await turns.acount() == len(runs)
    assert len(deployed.model.requests) <= len(runs)  # no turn asked the model twice
