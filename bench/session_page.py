"""Benchmark: the session page of a long session (20, 100 and 500 turns).

One Agent session grows turn by turn through the real pipeline (turn_start, the Reasoner, the built-in
offline model over the SDK: each turn lists the modes with a tool call, then answers, streamed as
deltas); at each size the page `GET /sessions/<id>/` is requested as its owner with Django's test
client. Printed per size: the page's median time over `--runs` requests, its bytes, the heap peak of
one request (tracemalloc), the queries it made, and what the session stores (its events' bytes, of
them the step.started events'). The last line is the ratio of the largest page to the smallest
(target: time, bytes and heap within 1.5x).

    .venv/bin/python bench/session_page.py [--sizes 20,100,500] [--runs 5]
(SQLite in a temp dir when DATABASE_URL is unset.)
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time
import tracemalloc

from benchenv import setup_django  # bench/benchenv.py: this script runs from bench/

setup_django(
    APTIX_MCP_AUTOSTART="false",
    APTIX_RUN_SWEEP="false",
    LOG_LEVEL="ERROR",
    ALLOWED_HOSTS="testserver,127.0.0.1,localhost",
)

from asgiref.sync import sync_to_async
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.db import connection
from django.test import Client

from agents.models import Turn, TurnEvent
from agents.run.reasoner import Reasoner
from agents.sessions import session_create
from agents.turns import turn_start
from aptix.teams import team_ensure

MESSAGES = ["What modes are there?", "Which mode fits data analysis? List the modes again."]


def setup():
    call_command("migrate", verbosity=0)
    user, _ = get_user_model().objects.get_or_create(username="bench-page")
    team = team_ensure(name="Bench page", owner=user)
    return user, session_create(team=team, user=user, execution="agent", title="Long session")


async def grow(session, turns: int, reasoner: Reasoner) -> None:
    """Run turns until the session has `turns` of them."""
    have = await Turn.objects.filter(session=session).acount()
    for i in range(have, turns):
        turn = await sync_to_async(turn_start)(session=session, text=MESSAGES[i % len(MESSAGES)])
        await reasoner.run(turn.id)


def stored(session) -> tuple[int, int]:
    """Bytes of the session's event payloads, and of its step.started payloads (as the database keeps them)."""
    events = TurnEvent.objects.filter(turn__session=session)
    total = steps = 0
    for type_, payload in events.values_list("type", "payload").iterator():
        size = len(_json(payload))
        total += size
        steps += size if type_ == "step.started" else 0
    return total, steps


def _json(value) -> bytes:
    return json.dumps(value, separators=(",", ":")).encode()


def measure(client: Client, url: str, runs: int) -> dict:
    client.get(url)  # warm: templates, caches
    timings = []
    for _ in range(runs):
        started = time.perf_counter()
        response = client.get(url)
        timings.append((time.perf_counter() - started) * 1000)
        assert response.status_code == 200, response.status_code
    queries: list[str] = []  # counted by a wrapper: a request start clears connection.queries
    with connection.execute_wrapper(lambda execute, sql, *args: queries.append(sql) or execute(sql, *args)):
        client.get(url)
    tracemalloc.start()
    client.get(url)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return {
        "ms": statistics.median(timings),
        "bytes": len(response.content),
        "heap": peak,
        "queries": len(queries),
    }


def main(sizes: list[int], runs: int) -> None:
    user, session = setup()
    client = Client()
    client.force_login(user)
    url = f"/sessions/{session.id}/"
    reasoner = Reasoner()
    print(f"session_page: GET {url} of an Agent session (offline model, one tool call a turn), {runs} runs")
    header = f"  {'turns':>5}  {'time (median)':>13}  {'bytes':>9}  {'heap peak':>10}  {'queries':>7}"
    print(header + "  stored events (step.started)")
    rows = {}
    for size in sizes:
        started = time.perf_counter()
        asyncio.run(grow(session, size, reasoner))
        grown = time.perf_counter() - started
        row = rows[size] = measure(client, url, runs)
        total, steps = stored(session)
        print(
            f"  {size:>5}  {row['ms']:>10.1f} ms  {row['bytes']:>9,}  {row['heap'] / 2**20:>6.1f} MiB"
            f"  {row['queries']:>7}"
            f"  {total / 2**20:6.2f} MiB ({steps / 2**20:.2f} MiB)   [grown in {grown:.0f} s]"
        )
    small, large = rows[min(sizes)], rows[max(sizes)]
    print(
        f"  {max(sizes)} vs {min(sizes)} turns: time {large['ms'] / small['ms']:.2f}x, bytes "
        f"{large['bytes'] / small['bytes']:.2f}x, heap {large['heap'] / small['heap']:.2f}x (target <= 1.5x)"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="20,100,500")
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    main(sorted(int(s) for s in args.sizes.split(",")), args.runs)
