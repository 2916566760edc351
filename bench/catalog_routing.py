"""Benchmark: a 60-case routing run of the catalog (agents/catalog_tests) with the built-in offline
model, through the real turn machinery (hidden sessions, the in-process runner, events written and
broadcast) at APTIX_CATALOG_TEST_CONCURRENCY cases at once (default 4). The seed catalog's utterances
are repeated to make 60 cases. Prints cases, seconds and accuracy (target: under 30 s on 2 cores).

    DATABASE_URL=... .venv/bin/python bench/catalog_routing.py [--cases 60]
(SQLite in a temp dir when DATABASE_URL is unset.)
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import time

from benchenv import setup_django  # bench/benchenv.py: this script runs from bench/

setup_django()

from asgiref.sync import sync_to_async
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management import call_command

from agents.catalog_tests import routing_cases, routing_run
from aptix.teams import team_ensure


def setup():
    call_command("migrate", verbosity=0)
    user = get_user_model().objects.create_user("bench-curator", password="x")
    team = team_ensure(name="Bench catalog", owner=user)
    return user, team


async def main(count: int) -> None:
    user, team = await sync_to_async(setup)()
    seed = await sync_to_async(routing_cases)(team=team)
    cases = list(itertools.islice(itertools.cycle(seed), count))
    began = time.perf_counter()
    result = await routing_run(user=user, team=team, cases=cases)
    seconds = time.perf_counter() - began
    per_case = sorted(c.seconds for c in result.cases)
    print(
        f"catalog routing run: {len(result.cases)} cases ({len(seed)} seed utterances), "
        f"concurrency {settings.APTIX_CATALOG_TEST_CONCURRENCY}, offline model"
    )
    print(f"  {seconds:.1f} s in all, median case {per_case[len(per_case) // 2]:.3f} s; accuracy {result.accuracy}")
    print(f"  target: under 30 s -> {'ok' if seconds < 30 else 'TOO SLOW'}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=60)
    asyncio.run(main(parser.parse_args().cases))
