"""Benchmark: the 2 web + 2 worker deployment at 100 concurrent turns.

Two web processes (`manage.py aptix_serve`) and two workers (`manage.py aptix_worker`) run as real
subprocesses on one PostgreSQL database and one Redis (tests/helpers/deployment.py, the machinery of
the scale-out test), with a scripted OpenAI-compatible model on loopback streaming `--tokens`
tokens at `--rate` tokens/s. The model's own time for such a reply is measured first (streamed
straight from it); one turn warms the processes up (unmeasured: a worker's first run sets things up),
one turn runs alone (the reference), then one websocket per session opens on the second web process
(a user's page is open before they send) and `--turns` turns are posted at once through the JSON API
of the first. Printed:

- double runs: turns whose message reached the model more than once (the model counts the
  requests per message; each turn is one step), and turns that never reached it;
- lost / duplicated events per client: each socket's seqs against the turn's stored events;
- completion: from the posts to the last answer, each turn's time (p50, p95) against the lone
  turn's, and the lone turn's against the model's time (targets: a lone turn within model time +
  300 ms; 100 at once p95 within 2x a lone turn);
- where the time goes: the CPU seconds each kind of process used while the turns ran (web
  processes, workers, PostgreSQL, Redis, and this process: the scripted model and the clients), per
  turn, against the CPU the machine had in that time.

    bin/with-postgres bin/with-redis .venv/bin/python bench/scale_out.py [--turns 100] [--tokens 100] [--rate 50]
        [--profile DIR]

`--profile DIR` samples each process while the turns run with py-spy (not a dependency: `pip install
--target /tmp/pyspy py-spy`, then `--py-spy /tmp/pyspy/bin/py-spy`) into DIR/<process>.txt, in its
collapsed-stack format (one stack and its sample count a line; flamegraph.pl or speedscope read it).

(`make bench` runs it so. It needs DATABASE_URL on PostgreSQL, which it migrates, and a Redis URL in
APTIX_TEST_REDIS_URL, as bin/with-redis exports it, or REDIS_URL. `--single` without DATABASE_URL runs
on SQLite in a temporary directory: `make run`'s embedded default.)
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.browser.live_settings")
os.environ.setdefault("SECRET_KEY", "bench-only")
os.environ.setdefault("APTIX_MCP_AUTOSTART", "false")
os.environ.setdefault("LOG_LEVEL", "ERROR")
# This process only prepares data and plays the clients: the processes under test get Redis.
REDIS = os.environ.pop("REDIS_URL", "") or os.environ.get("APTIX_TEST_REDIS_URL", "")
ON_POSTGRES = os.environ.get("DATABASE_URL", "").startswith("postgres")
if "--single" in sys.argv and not ON_POSTGRES:  # the embedded default: SQLite, the in-memory layer
    os.environ["DATABASE_URL"] = ""
    os.environ["APTIX_VAR_DIR"] = tempfile.mkdtemp(prefix="aptix-bench-scale-out-")
elif not ON_POSTGRES or not REDIS:
    sys.exit(
        "bench/scale_out.py needs PostgreSQL and Redis (--single: PostgreSQL or, without DATABASE_URL, SQLite): "
        "bin/with-postgres bin/with-redis .venv/bin/python bench/scale_out.py"
    )

import django

django.setup()

import httpx2
from asgiref.sync import sync_to_async
from django.conf import settings
from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY, get_user_model
from django.contrib.sessions.backends.db import SessionStore
from django.core.management import call_command
from django.utils import timezone

from agents.models import Turn, TurnEvent
from agents.sessions import session_create
from aptix.teams import team_ensure
from aptix.tokens import api_token_create
from tests.helpers.deployment import deployment, requests_per_message, warnings_in, watch
from tests.helpers.proc_cpu import ProcessCpu
from tests.helpers.scripted_model import ScriptedModel, openai_client

HEARTBEAT = 2.0  # as the scale-out test: 100 runs starting at once on 2 cores must renew their leases


def prepare(turns: int) -> tuple[list[str], str, bytes]:
    call_command("migrate", verbosity=0)
    user, _ = get_user_model().objects.get_or_create(username="bench-scale-out")
    team = team_ensure(name="Bench scale-out", owner=user)
    sessions = [session_create(team=team, user=user, execution="ask").id for _ in range(turns + 1)]
    _, token = api_token_create(user=user)
    login = SessionStore()  # a signed-in browser's session, for the websockets
    login[SESSION_KEY] = str(user.pk)
    login[BACKEND_SESSION_KEY] = "django.contrib.auth.backends.ModelBackend"
    login[HASH_SESSION_KEY] = user.get_session_auth_hash()
    login.save()
    return sessions, token, f"{settings.SESSION_COOKIE_NAME}={login.session_key}".encode()


async def run(
    started,
    sessions: list[str],
    token: str,
    cookie: bytes,
    *,
    tokens: list[str],
    delay: float,
    cpu=None,
    one_api: bool = False,
) -> dict:
    """Post one turn per session at once, each watched on a socket of the other web process; what
    happened. The posts are spread over the web processes as a proxy in front of them would (turn i
    to web i mod 2, its socket on the other one); `one_api`: all to web A, all sockets on web B (the
    layout of the first figures). A post or a socket the deployment refuses is counted, not raised.
    The sockets open first, as a user's page is open before they send (bench/streams_concurrency.py,
    the one-process figure, connects its sockets before its clock starts too); then the clock, and
    `cpu` (a ProcessCpu), start."""
    webs, model = started.webs, started.model
    api = [webs[0] if one_api else webs[i % len(webs)] for i in range(len(sessions))]
    view = [webs[-1] if one_api else webs[(i + 1) % len(webs)] for i in range(len(sessions))]  # --single: one
    for _ in sessions:
        model.reply(pieces=tokens, chunk_delay=delay, paced=True)
    opened = [asyncio.Event() for _ in sessions]
    watchers = [asyncio.create_task(watch(view[i], sid, cookie, opened[i])) for i, sid in enumerate(sessions)]
    await asyncio.wait([asyncio.create_task(o.wait()) for o in opened], timeout=60)
    limits = httpx2.Limits(max_connections=len(sessions) + 10)
    async with httpx2.AsyncClient(timeout=300, limits=limits) as client:
        if cpu is not None:
            cpu.start()
        start, posted_at = time.perf_counter(), timezone.now()

        async def post(i: int, sid: str) -> tuple[dict | None, float]:
            response = await client.post(
                f"{api[i].url}/api/v1/agent/execute",
                json={"conversationId": sid, "message": f"bench {sid} {i}", "execution": "ask"},
                headers={"Authorization": f"Bearer {token}"},
            )
            return (response.json() if response.status_code == 200 else None), time.perf_counter() - start

        results = await asyncio.gather(*(post(i, sid) for i, sid in enumerate(sessions)))
    done, _ = await asyncio.wait(watchers, timeout=120)
    used = cpu.stop() if cpu is not None else None  # before this process reads the events back
    seen = [w.result() if w in done and not w.exception() else None for w in watchers]
    asked = requests_per_message(model)
    streamed = model.stream_seconds[-len(sessions) :] or [float("nan")]
    lost = duplicated = clients_short = 0
    for (body, _), watched in zip(results, seen, strict=True):
        if body is None or watched is None:
            continue
        stored = {e async for e in TurnEvent.objects.filter(turn_id=body["turnId"]).values_list("seq", flat=True)}
        missing = len(stored - set(watched[0]))
        lost += missing
        clients_short += bool(missing)
        duplicated += len(watched[0]) - len(set(watched[0]))
    for watcher in watchers:
        watcher.cancel()
    turn_ids = [body["turnId"] for body, _ in results if body is not None]
    phases: dict[str, list[float]] = {"recorded": [], "queued": [], "ran": []}  # seconds, per turn
    async for created, began, ended in Turn.objects.filter(pk__in=turn_ids).values_list(
        "created_at", "started_at", "finished_at"
    ):
        if began and ended:
            phases["recorded"].append((created - posted_at).total_seconds())
            phases["queued"].append((began - created).total_seconds())
            phases["ran"].append((ended - began).total_seconds())
    per_type = Counter()
    async for kind in TurnEvent.objects.filter(turn_id__in=turn_ids).values_list("type", flat=True):
        per_type[kind] += 1
    messages = [f"bench {sid} {i}" for i, sid in enumerate(sessions)]
    times = sorted(t for body, t in results if body is not None) or [float("nan")]
    p50, p95 = p50_p95(times)
    return {
        "statuses": Counter(body["status"] if body else "refused" for body, _ in results),
        "sockets_failed": sum(1 for watched in seen if watched is None),
        "double": sum(1 for m in messages if asked[m] > 1),
        "never": sum(1 for m in messages if asked[m] == 0),
        "lost": lost,
        "duplicated": duplicated,
        "clients_short": clients_short,
        "events": {kind: round(n / max(len(turn_ids), 1), 1) for kind, n in per_type.most_common()},
        "cpu": used,
        "model": p50_p95(streamed),
        "phases": {k: p50_p95(v) for k, v in phases.items() if v},
        "wall": times[-1],
        "p50": p50,
        "p95": p95,
    }


def p50_p95(values: list[float]) -> tuple[float, float]:
    ordered = sorted(values)
    return statistics.median(ordered), ordered[max(0, round(len(ordered) * 0.95) - 1)]


async def model_time(tokens: list[str], delay: float) -> float:
    """Seconds the scripted model takes to stream the reply, with no Aptix in between (median of 3)."""
    model = ScriptedModel()
    client = openai_client(model)
    times = []
    for _ in range(3):
        model.reply(pieces=tokens, chunk_delay=delay, paced=True)
        start = time.perf_counter()
        stream = await client.chat.completions.create(
            model="scripted-model", messages=[{"role": "user", "content": "time"}], stream=True
        )
        async for _chunk in stream:
            pass
        times.append(time.perf_counter() - start)
    await client.close()
    return statistics.median(times)


def processes(started) -> dict[str, list[int]]:
    """The processes whose CPU is counted, by kind."""
    pid = {id(web): [web.process.pid] if web.process else [] for web in started.webs}
    if len(started.webs) == 1:
        kinds = {"web (the API calls and the sockets)": pid[id(started.webs[0])]}
    else:
        kinds = {"web A": pid[id(started.webs[0])], "web B": pid[id(started.webs[1])]}
    if started.workers:
        kinds["worker"] = [worker.process.pid for worker in started.workers]
    kinds["bench (model + clients)"] = [os.getpid()]
    return kinds


def profile(py_spy: str, directory: Path, kinds: dict[str, list[int]]) -> list[subprocess.Popen]:
    """A py-spy sampler per process (non-blocking: the processes are not paused), until SIGINT."""
    directory.mkdir(parents=True, exist_ok=True)
    samplers = []
    for kind, pids in kinds.items():
        for i, pid in enumerate(pids):
            name = f"{kind.split(' (')[0].replace(' ', '-')}-{i}.txt"
            # --gil: only the thread holding the GIL is sampled, so the samples are CPU, not waits
            command = [py_spy, "record", "--nonblocking", "--gil", "-r", "100", "-f", "raw"]
            command += ["-o", str(directory / name)]
            samplers.append(
                subprocess.Popen([*command, "--pid", str(pid)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            )
    return samplers


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--turns", type=int, default=100)
    parser.add_argument("--tokens", type=int, default=100)
    parser.add_argument("--rate", type=float, default=50.0)
    parser.add_argument("--profile", type=Path, help="sample the processes with py-spy into this directory")
    parser.add_argument("--py-spy", default="py-spy", help="the py-spy command (for --profile)")
    parser.add_argument(
        "--one-api",
        action="store_true",
        help="post every turn to web A and watch every turn on web B (the first figures' layout)",
    )
    parser.add_argument(
        "--single", action="store_true", help="the same turns on one web process (no Redis, no workers): the baseline"
    )
    args = parser.parse_args()
    sessions, token, cookie = await sync_to_async(prepare)(args.turns + 1)
    # One token a chunk, as OpenAI, vLLM and llama.cpp stream: --tokens at --rate takes tokens/rate seconds.
    tokens, delay = ["word "] * args.tokens, 1.0 / args.rate
    model_seconds = await model_time(tokens, delay)
    with tempfile.TemporaryDirectory(prefix="aptix-scale-out-") as var:
        running = deployment(
            Path(var),
            redis_url="" if args.single else REDIS,
            secret_key=settings.SECRET_KEY,
            webs=1 if args.single else 2,
            workers=0 if args.single else 2,
            heartbeat=HEARTBEAT,
            APTIX_RATE_TURNS="off",
            APTIX_RATE_API="off",
            APTIX_WS_MAX_PER_USER=str(args.turns + 10),
            LOG_LEVEL="WARNING",
        )
        async with running as started:
            await run(started, sessions[:1], token, cookie, tokens=tokens, delay=delay)  # warm-up
            lone = await run(started, sessions[1:2], token, cookie, tokens=tokens, delay=delay)
            started.model.requests.clear()
            cpu = await asyncio.to_thread(
                ProcessCpu,
                processes(started),
                postgres=ON_POSTGRES,
                redis_url="" if args.single else REDIS,
            )
            samplers = profile(args.py_spy, args.profile, cpu.kinds) if args.profile else []
            many = await run(
                started, sessions[2:], token, cookie, tokens=tokens, delay=delay, cpu=cpu, one_api=args.one_api
            )
            used = many["cpu"]
            for sampler in samplers:
                sampler.send_signal(signal.SIGINT)  # py-spy writes its file and exits
            for sampler in samplers:
                await asyncio.to_thread(sampler.wait, 30)
            problems = [line for log in started.logs() for line in warnings_in(log, last=5)]
    shape = (
        f"1 web process, no workers ({'PostgreSQL' if ON_POSTGRES else 'SQLite'}, no Redis)"
        if args.single
        else "2 web + 2 workers (PostgreSQL, Redis)"
    )
    print(
        f"{shape}, {args.tokens} tokens a turn at {args.rate:g} tokens/s: "
        f"the model streams it in {model_seconds:.2f} s; a lone turn (warm): {lone['p50']:.2f} s, "
        f"{(lone['p50'] - model_seconds) * 1000:.0f} ms beyond the model (target <= 300 ms)"
    )
    print(
        f"{args.turns} turns at once: {dict(many['statuses'])}; {many['double']} ran twice, {many['never']} never ran; "
        f"{many['sockets_failed']} sockets failed; {many['lost']} events lost ({many['clients_short']} clients missed "
        f"some), {many['duplicated']} duplicated; "
        f"all done in {many['wall']:.2f} s, a turn p50 {many['p50']:.2f} s "
        f"({many['p50'] / lone['p50']:.2f}× a lone turn), p95 {many['p95']:.2f} s "
        f"({many['p95'] / lone['p50']:.2f}× a lone turn; target <= 2×)"
    )
    print(
        "where a turn's time went (p50 / p95): "
        + ", ".join(f"{k} {p50:.2f} / {p95:.2f} s" for k, (p50, p95) in many["phases"].items())
        + " (recorded: from the posts to the turn's row; queued: to its start; ran: to its end)"
    )
    print("the model's own streams meanwhile (p50 / p95): {:.2f} / {:.2f} s".format(*many["model"]))
    events = many["events"]
    print(f"events a turn: {sum(events.values()):.1f}: " + ", ".join(f"{k} {v:g}" for k, v in events.items()))
    cores = os.cpu_count() or 1
    print(
        f"CPU while they ran ({used.wall:.1f} s, {cores} cores: {used.wall * cores:.1f} CPU s available): "
        + ", ".join(
            f"{kind} {seconds:.1f} s ({seconds / args.turns * 1000:.0f} ms a turn)"
            for kind, seconds in used.by_kind.items()
        )
        + f"; all {used.total:.1f} s"
    )
    for line in problems:
        print("  log:", line[: int(os.environ.get("BENCH_LOG_CHARS", "300"))])


if __name__ == "__main__":
    asyncio.run(main())
