"""Benchmark: does a catalog test run make a person's turn wait? A person's turns (the offline model,
Ask, in one process with the in-process runner) are timed from submit to their first piece of reply
on the session's channel group — first alone, then while a 60-case catalog test run goes on in the
same process (agents/catalog_tests/execute.py, APTIX_CATALOG_TEST_CONCURRENCY cases at once, one at a
time while a person's turn is live). Prints both first-token delays (p50, max) and the run's time.

    DATABASE_URL=... .venv/bin/python bench/catalog_yield.py [--turns 10] [--cases 60]
(SQLite in a temp dir when DATABASE_URL is unset.)
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import statistics
import time

from benchenv import setup_django  # bench/benchenv.py: this script runs from bench/

setup_django(DEBUG="false", APTIX_AUTO_TITLES="false")

from asgiref.sync import sync_to_async
from channels.layers import get_channel_layer
from django.contrib.auth import get_user_model
from django.core.management import call_command

from agents.catalog_tests import execute
from agents.catalog_tests.cases import routing_cases
from agents.catalog_tests.runs import test_run_create
from agents.events.channel import session_group
from agents.models import CatalogTestRun
from agents.sessions import session_create
from agents.submit import turn_submit
from agents.turns import turn_start
from aptix.models import Membership
from aptix.teams import team_ensure
from modes.models import AgentMode


def setup(cases: int):
    call_command("migrate", verbosity=0)
    users = get_user_model().objects
    curator = users.create_superuser("bench-curator", "c@example.org", "x")
    person = users.create_user("bench-person", password="x")
    team = team_ensure(name="Bench catalog", owner=curator)
    Membership.objects.create(team=team, user=person, role=Membership.Role.MEMBER)
    # Repeat the seed catalog's utterances until there are `cases` of them (as test utterances).
    seed = [case.utterance for case in routing_cases(team=team)]
    extra = list(itertools.islice(itertools.cycle(seed), max(0, cases - len(seed))))
    general = AgentMode.objects.get(key="general")
    general.test_utterances = [*general.test_utterances, *(f"{text} ({n})" for n, text in enumerate(extra))]
    general.save(update_fields=["test_utterances"])
    return curator, person, team


async def first_token(person, team) -> float:
    """Seconds from submitting a person's turn to the first piece of its reply on the session's group."""
    session = await sync_to_async(session_create)(team=team, user=person, execution="ask")
    layer = get_channel_layer()
    channel = await layer.new_channel()
    await layer.group_add(session_group(session.id), channel)
    began = time.perf_counter()
    submitted = await turn_submit(lambda: turn_start(session=session, text="Summarise what you can do in one line"))
    try:
        while True:
            message = await layer.receive(channel)
            if any(event["event"] == "model.delta" for event in message.get("events", [])):
                return time.perf_counter() - began
    finally:
        await layer.group_discard(session_group(session.id), channel)
        if submitted.started is not None:
            await submitted.started


def figures(delays: list[float]) -> str:
    ms = [d * 1000 for d in delays]
    return f"p50 {statistics.median(ms):.0f} ms, max {max(ms):.0f} ms ({len(ms)} turns)"


async def main(turns: int, cases: int) -> None:
    curator, person, team = await sync_to_async(setup)(cases)
    alone = [await first_token(person, team) for _ in range(turns)]
    run = await sync_to_async(test_run_create)(user=curator)
    began = time.perf_counter()
    task = execute.test_run_launch(run.pk)
    await asyncio.sleep(0.5)  # the run is under way (its first cases started)
    during = []
    for _ in range(turns):
        during.append(await first_token(person, team))
        await asyncio.sleep(0.2)  # a person's think time: the run takes up its pace again meanwhile
    await task
    seconds = time.perf_counter() - began
    run = await CatalogTestRun.objects.aget(pk=run.pk)
    print(f"catalog test run beside a person's turns (offline model, in-process runner, {run.total} cases)")
    print(f"  first token alone:        {figures(alone)}")
    print(f"  first token during a run: {figures(during)}")
    print(f"  the run: {run.status}, {run.done} cases in {seconds:.1f} s, accuracy {run.accuracy}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=10)
    parser.add_argument("--cases", type=int, default=60)
    arguments = parser.parse_args()
    asyncio.run(main(arguments.turns, arguments.cases))
