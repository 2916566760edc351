"""Benchmark: a web process's memory over many turns.

One web process (`manage.py aptix_serve`, as a real subprocess: tests/helpers/deployment.py) with no
workers and no Redis, on the database DATABASE_URL names (PostgreSQL; SQLite in a temporary
directory when unset: the embedded default), a scripted OpenAI-compatible model on loopback
streaming `--tokens` tokens a reply. `--sessions` sessions take `--turns` turns in all through the
JSON API (`--at-once` sessions at a time, each session's turns one after another, each watched by no
socket), and the process's resident memory (VmRSS in /proc) is read after the first 10 turns and at
every tenth of the way. Printed:

- `RSS after N turns: X MB` for each reading;
- the growth from the reading after 10 turns to the last, against the target (≤ 60 MB from 10 to
  1,000 turns in 100 sessions: no growth per turn; the caches that hold anything are bounded, and
  listed in docs/operations.md);
- turns that did not complete.

    .venv/bin/python bench/memory.py [--turns 1000] [--sessions 100] [--at-once 10] [--tokens 30]
    bin/with-postgres .venv/bin/python bench/memory.py
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.browser.live_settings")
os.environ.setdefault("SECRET_KEY", "bench-only")
os.environ.setdefault("APTIX_MCP_AUTOSTART", "false")
os.environ.setdefault("LOG_LEVEL", "ERROR")
os.environ.pop("REDIS_URL", None)  # one process: the in-memory layer
if not os.environ.get("DATABASE_URL"):
    os.environ["APTIX_VAR_DIR"] = tempfile.mkdtemp(prefix="aptix-bench-memory-")

import django

django.setup()

import httpx2
from asgiref.sync import sync_to_async
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management import call_command

from agents.sessions import session_create
from aptix.teams import team_ensure
from aptix.tokens import api_token_create
from tests.helpers.deployment import deployment, warnings_in

TARGET_MB = 60


def prepare(sessions: int) -> tuple[list[str], str]:
    call_command("migrate", verbosity=0)
    user, _ = get_user_model().objects.get_or_create(username="bench-memory")
    team = team_ensure(name="Bench memory", owner=user)
    ids = [session_create(team=team, user=user, execution="ask").id for _ in range(sessions)]
    _, token = api_token_create(user=user)
    return ids, token


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmRSS for process {pid}")


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--turns", type=int, default=1000)
    parser.add_argument("--sessions", type=int, default=100)
    parser.add_argument("--at-once", type=int, default=10, help="sessions taking turns at the same time")
    parser.add_argument("--tokens", type=int, default=30, help="tokens a reply (streamed without pauses)")
    args = parser.parse_args()
    sessions, token = await sync_to_async(prepare)(args.sessions)
    reply = ["word "] * args.tokens
    statuses: Counter[str] = Counter()
    readings: list[tuple[int, float]] = []
    with tempfile.TemporaryDirectory(prefix="aptix-memory-") as var:
        running = deployment(
            Path(var),
            redis_url="",
            secret_key=settings.SECRET_KEY,
            webs=1,
            workers=0,
            heartbeat=2.0,
            APTIX_RATE_TURNS="off",
            APTIX_RATE_API="off",
            LOG_LEVEL="WARNING",
        )
        async with running as started:
            web = started.webs[0]
            pid = web.process.pid
            done = 0
            limits = httpx2.Limits(max_connections=args.at_once + 5)
            async with httpx2.AsyncClient(base_url=web.url, timeout=120, limits=limits) as client:

                async def turn(session_id: str, n: int) -> None:
                    started.model.reply(pieces=reply)
                    response = await client.post(
                        "/api/v1/agent/execute",
                        json={"conversationId": session_id, "message": f"turn {n}", "execution": "ask"},
                        headers={"Authorization": f"Bearer {token}"},
                    )
                    statuses[response.json().get("status", "?") if response.status_code == 200 else "refused"] += 1

                async def turns(count: int) -> None:
                    """`count` turns over the sessions round-robin, `--at-once` sessions at a time."""
                    nonlocal done
                    plan = [sessions[(done + i) % len(sessions)] for i in range(count)]
                    for start in range(0, count, args.at_once):
                        batch = plan[start : start + args.at_once]
                        await asyncio.gather(*(turn(sid, done + start + i) for i, sid in enumerate(batch)))
                    done += count

                await turns(10)
                readings.append((done, rss_mb(pid)))
                step = max(10, (args.turns - 10) // 10)
                while done < args.turns:
                    await turns(min(step, args.turns - done))
                    readings.append((done, rss_mb(pid)))
            problems = warnings_in(web.log_path, last=5)
    database = "PostgreSQL" if settings.DATABASES["default"]["ENGINE"].endswith("postgresql") else "SQLite"
    print(f"1 web process on {database}, {args.turns} turns in {args.sessions} sessions ({args.at_once} at once)")
    for count, mb in readings:
        print(f"RSS after {count} turns: {mb:.1f} MB")
    growth = readings[-1][1] - readings[0][1]
    print(
        f"growth from {readings[0][0]} to {readings[-1][0]} turns: {growth:+.1f} MB "
        f"({growth * 1024 / max(readings[-1][0] - readings[0][0], 1):.1f} KB a turn; target <= {TARGET_MB} MB); "
        f"statuses {dict(statuses)}"
    )
    for line in problems:
        print("  log:", line[:300])


if __name__ == "__main__":
    asyncio.run(main())
