"""Benchmark: an automation scheduled every minute on 2 web + 2 worker processes for ten minutes,
one worker SIGKILLed and restarted in the middle (issue's done-when, at its real cadence; the test
tests/automations/test_schedule_deployment.py does the same every five seconds).

The processes are real subprocesses on one PostgreSQL and one Redis (tests/helpers/deployment.py),
with a scripted model on loopback. Printed: the runs per scheduled time (each must be 1), the times
missed between the first and the last (must be 0), and how late each run's turn started after its
scheduled time (p50, max; the target is within 30 s).

    bin/with-postgres bin/with-redis .venv/bin/python bench/automations_schedule.py [--minutes 10] [--cron "* * * * *"]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from collections import Counter
from datetime import timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.browser.live_settings")
os.environ.setdefault("SECRET_KEY", "bench-only")
os.environ.setdefault("APTIX_MCP_AUTOSTART", "false")
os.environ.setdefault("LOG_LEVEL", "ERROR")
REDIS = os.environ.pop("REDIS_URL", "") or os.environ.get("APTIX_TEST_REDIS_URL", "")
if not os.environ.get("DATABASE_URL", "").startswith("postgres") or not REDIS:
    sys.exit(
        "needs PostgreSQL and Redis: bin/with-postgres bin/with-redis .venv/bin/python bench/automations_schedule.py"
    )

import django

django.setup()

import itertools

from asgiref.sync import sync_to_async
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management import call_command

from agents.models import Turn
from aptix.teams import team_ensure
from automations.models import AutomationRun
from automations.services import automation_create
from tests.helpers.deployment import deployment, warnings_in


def prepare(cron: str) -> str:
    user, _ = get_user_model().objects.get_or_create(username="bench-automations")
    team = team_ensure(name="Bench automations", owner=user)
    automation, _ = automation_create(
        user=user,
        team=team,
        data={"name": f"Bench {time.time():.0f}", "prompt": "Tick at {time}", "schedule": {"cron": cron}},
    )
    return automation.pk


def figures(automation_id: str) -> dict:
    runs = list(AutomationRun.objects.filter(automation_id=automation_id, trigger="schedule").order_by("scheduled_for"))
    firsts = [run for run in runs if run.attempt == 1]
    per_time = Counter(run.scheduled_for for run in firsts)
    times = sorted(per_time)
    steps = [later - earlier for earlier, later in itertools.pairwise(times)]
    step = min(steps) if steps else timedelta(0)
    missed = sum(round(s / step) - 1 for s in steps) if step else 0
    started = dict(Turn.objects.filter(pk__in=[r.turn_id for r in runs if r.turn_id]).values_list("pk", "started_at"))
    late = [
        (started[run.turn_id] - run.scheduled_for).total_seconds()
        for run in firsts
        if run.turn_id and started.get(run.turn_id)
    ]
    return {
        "times": len(times),
        "runs per time": sorted(set(per_time.values())),
        "missed": missed,
        "statuses": dict(Counter(run.status for run in runs)),
        "late p50 s": round(statistics.median(late), 2) if late else None,
        "late max s": round(max(late), 2) if late else None,
    }


async def main(minutes: int, cron: str) -> None:
    await sync_to_async(call_command)("migrate", verbosity=0)  # before the processes start on the database
    with tempfile.TemporaryDirectory() as var:
        running = deployment(
            Path(var),
            redis_url=REDIS,
            secret_key=settings.SECRET_KEY,
            heartbeat=2.0,
            APTIX_AUTOMATIONS_TICK="5",
            APTIX_AUTO_TITLES="false",
        )
        async with running as deployed:
            for _ in range(minutes * 2 + 10):
                deployed.model.reply("Noted.")
            automation_id = await sync_to_async(prepare)(cron)
            started = time.monotonic()
            await asyncio.sleep(minutes * 30)  # the schedule's own time: nothing to await but the clock
            await deployed.workers[0].restart()
            print(f"worker 0 SIGKILLed and restarted after {time.monotonic() - started:.0f} s", flush=True)
            await asyncio.sleep(minutes * 30 + 15)
            for log in deployed.logs():
                for line in warnings_in(log, 5):
                    print(f"{log.name}: {line}")
        result = await sync_to_async(figures)(automation_id)
    for name, value in result.items():
        print(f"{name}: {value}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--minutes", type=int, default=10)
    parser.add_argument("--cron", default="* * * * *")
    options = parser.parse_args()
    asyncio.run(main(options.minutes, options.cron))
