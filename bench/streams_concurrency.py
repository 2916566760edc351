"""Benchmark: concurrent streamed turns on one process.

For each count in `--streams` (default 1, 20, 60, 100) that many turns run at once in this process
(the in-process runner), each watched by one websocket through the real ASGI application (origin
check, session cookie, the consumer, the shared renderer). The model is an OpenAI-compatible server
in this process, reached through the openai SDK like the offline model: it streams `--tokens`
tokens at `--rate` tokens/s per request. Printed per count:

- completion: the median and slowest time from start to the final frame on the socket, and the
  median relative to a lone turn's (the 1-stream run; target: ≤ 1.25× at 60 streams);
- first token: from the model sending a turn's first token to the socket receiving it, p50 and
  p95, and the p95 added to a lone turn's (target ≤ 50 ms at 20 streams);
- CPU per stream: process CPU time of the run divided by its streams (the model server's share
  included: it runs in this process too, unless `--model-process`);
- lost / duplicated events: each socket's events against the turn's stored events.

    .venv/bin/python bench/streams_concurrency.py [--streams 1 20 60 100] [--tokens 200] [--rate 50] [--repeat 3]
        [--ttft 0.0] [--users 1] [--model-process]

`--users N` spreads the streams over N members of the team (stream i is user i mod N's), as a team's
people would be; with 1, one user holds every stream (each note to a user's sockets reaches all).

`--model-process` runs the model (bench/paced_model.py) in a process of its own, reached over loopback
HTTP as a real model server is: the CPU a stream is then Aptix's alone (the HTTP client's sockets
included), and the model does not compete with it for this process's interpreter.

A session's title, asked of the model after its first answer, is answered with a few words, as a model
answers it (it was another 200-token stream, a second reply's cost for every turn).

`--ttft` makes the model wait that long before its first token, as a real one does (a hosted model
takes 0.2-1 s): with 0, every turn's first token arrives while the batch's other turns are still
starting on the same event loop.

Each count runs `--repeat` batches and pools their samples (the lone turn's p50 is then over 3 turns).

(SQLite in a temp dir when DATABASE_URL is unset; the in-memory channel layer unless REDIS_URL.)
"""

from __future__ import annotations

import argparse
import asyncio
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

from benchenv import setup_django  # bench/benchenv.py: this script runs from bench/

setup_django(
    APTIX_MCP_AUTOSTART="false",
    APTIX_RUN_SWEEP="false",
    LOG_LEVEL="ERROR",
    APTIX_WS_MAX_PER_USER="1000",
    APTIX_RATE_LIMITS="false",
)

import httpx2
import openai
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator
from django.contrib.auth import get_user_model
from django.core.management import call_command
from paced_model import PacedModel  # bench/paced_model.py

from agents.llm import LLMClient, use_llm_client
from agents.llm.transport import StreamingASGITransport
from agents.models import TurnEvent
from agents.run.titles import TITLE_PROMPT
from agents.runner import get_runner
from agents.sessions import session_create
from agents.turns import turn_start
from aptix.asgi import application
from aptix.teams import team_ensure
from tests.helpers.streams import session_cookie

CURSOR = re.compile(r'id="stream-cursor" hx-swap-oob="true" data-turn="\w+" data-seq="(\d+)"')
TAIL = re.compile(r'(?:^<b|hx-swap-oob="beforeend:#live-tail"|class="live-tail") data-seq="(\d+)"')  # now | before
FINAL = re.compile(r'class="turn status-(completed|failed|cancelled|limit_reached)"')


async def watch(communicator: WebsocketCommunicator) -> tuple[float | None, float, list[int]]:
    """Until the final frame: when streamed text first arrived, when the turn ended, the seqs seen."""
    first_text, seqs = None, []
    while True:
        frame = await communicator.receive_from(timeout=120)
        now = time.perf_counter()
        seq = CURSOR.search(frame) or TAIL.search(frame)
        if seq:
            seqs.append(int(seq.group(1)))
        if first_text is None and "word" in frame:
            first_text = now
        if FINAL.search(frame):
            return first_text, now, seqs


class ModelHandle:
    """The paced model, in this process or (`url`) in one of its own: its first tokens' times."""

    def __init__(self, model: PacedModel | None = None, url: str = "") -> None:
        self.model, self.url = model, url

    async def clear(self) -> None:
        if self.model is not None:
            self.model.first_token.clear()
        else:
            async with httpx2.AsyncClient() as http:
                (await http.post(f"{self.url}/first-tokens/clear")).raise_for_status()

    async def first_tokens(self) -> dict[int, float]:
        if self.model is not None:
            return dict(self.model.first_token)
        async with httpx2.AsyncClient() as http:
            response = await http.get(f"{self.url}/first-tokens")
            return {int(k): v for k, v in response.json().items()}


async def start_model_process(args: argparse.Namespace) -> tuple[subprocess.Popen, str]:
    """bench/paced_model.py in a process of its own; its URL once it serves."""
    command = [sys.executable, str(Path(__file__).with_name("paced_model.py")), "--title-prompt", TITLE_PROMPT]
    command += ["--tokens", str(args.tokens), "--rate", str(args.rate), "--ttft", str(args.ttft)]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    assert process.stdout is not None
    url = (await asyncio.to_thread(process.stdout.readline)).strip()
    if not url.startswith("http"):
        process.kill()
        raise RuntimeError("bench/paced_model.py did not start")
    return process, url


async def run_batch(streams: int, model: ModelHandle, people: list[tuple[object, bytes]], team) -> dict:
    """`streams` turns at once, stream i in a new session of people[i mod len(people)] (user, cookie)."""
    owners = [people[i % len(people)] for i in range(streams)]
    sessions = [await sync_to_async(session_create)(team=team, user=user, execution="ask") for user, _ in owners]
    turns = [await sync_to_async(turn_start)(session=s, text=f"Answer me, stream {i}") for i, s in enumerate(sessions)]
    sockets = []
    for session, (_, cookie) in zip(sessions, owners, strict=True):
        headers = [(b"origin", b"http://127.0.0.1"), (b"cookie", cookie)]
        communicator = WebsocketCommunicator(application, f"/ws/sessions/{session.id}/", headers=headers)
        connected, _ = await communicator.connect(timeout=30)
        assert connected, "a socket was refused"
        sockets.append(communicator)
    await model.clear()
    watchers = [asyncio.create_task(watch(c)) for c in sockets]
    cpu, start = time.process_time(), time.perf_counter()
    for turn in turns:
        get_runner().start(turn.id)
    results = await asyncio.gather(*watchers)
    cpu = time.process_time() - cpu
    await asyncio.sleep(0.2)  # the last batches' writes
    lost = duplicated = 0
    for turn, (_, _, seen) in zip(turns, results, strict=True):
        stored = set(await sync_to_async(list)(TurnEvent.objects.filter(turn_id=turn.id).values_list("seq", flat=True)))
        lost += len(stored - set(seen))
        duplicated += len(seen) - len(set(seen))
    for communicator in sockets:
        await communicator.disconnect()
    done = [end - start for _, end, _ in results]
    sent = await model.first_tokens()
    added = [(first - sent[i]) * 1000 for i, (first, _, _) in enumerate(results) if first is not None]
    return {"done": done, "added": added, "cpu": cpu / streams, "lost": lost, "duplicated": duplicated}


async def run_batches(repeat: int, streams: int, *args) -> dict:
    """`repeat` batches of `streams` turns, their samples pooled: one batch's p95 of 20 first
    tokens is its second slowest, which a shared VM's hiccup moves by tens of milliseconds."""
    batches = [await run_batch(streams, *args) for _ in range(repeat)]
    done = [d for batch in batches for d in batch["done"]]
    added = [a for batch in batches for a in batch["added"]]
    return {
        "median": statistics.median(done),
        "slowest": max(done),
        "first_p50": statistics.median(added),
        "first_p95": statistics.quantiles(added, n=20)[-1] if len(added) > 1 else added[0],
        "cpu": statistics.median(batch["cpu"] for batch in batches),
        "lost": sum(batch["lost"] for batch in batches),
        "duplicated": sum(batch["duplicated"] for batch in batches),
    }


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--streams", type=int, nargs="+", default=[1, 20, 60, 100])
    parser.add_argument("--tokens", type=int, default=200)
    parser.add_argument("--rate", type=float, default=50.0)
    parser.add_argument("--repeat", type=int, default=3, help="batches per count, samples pooled")
    parser.add_argument("--ttft", type=float, default=0.0, help="the model's time to first token, seconds")
    parser.add_argument("--users", type=int, default=1, help="the streams spread over this many team members")
    parser.add_argument(
        "--model-process",
        action="store_true",
        help="the model in a process of its own, over loopback HTTP (the CPU figure is then Aptix's alone)",
    )
    args = parser.parse_args()
    await sync_to_async(call_command)("migrate", verbosity=0)
    people = []
    for n in range(max(1, args.users)):
        user, _ = await get_user_model().objects.aget_or_create(username=f"bench-streams-{n}" if n else "bench-streams")
        team = await sync_to_async(team_ensure)(name="Bench streams", owner=user)
        people.append((user, await session_cookie(user)))  # a signed-in browser's, as the tests make it
    if args.model_process:
        process, url = await start_model_process(args)
        model = ModelHandle(url=url)
        limits = httpx2.Limits(max_connections=None, max_keepalive_connections=max(args.streams) * 2)
        http = httpx2.AsyncClient(base_url=f"{url}/v1", limits=limits, timeout=120)
        base = f"{url}/v1"
    else:
        process, paced = None, PacedModel(args.tokens, args.rate, args.ttft, title_prompt=TITLE_PROMPT)
        model = ModelHandle(paced)
        http = httpx2.AsyncClient(transport=StreamingASGITransport(paced), base_url="http://paced.invalid/v1")
        base = "http://paced.invalid/v1"
    client = openai.AsyncOpenAI(api_key="x", base_url=base, http_client=http, max_retries=0)
    lone: dict | None = None
    print(
        f"{args.tokens} tokens a turn at {args.rate:g} tokens/s ({args.tokens / args.rate:.1f} s of model time), "
        f"first token after {args.ttft * 1000:.0f} ms; the streams of {len(people)} user(s)"
    )
    with use_llm_client(LLMClient(client, model="paced", label="paced")):
        await run_batch(2, model, people, team)  # warm-up (imports, first queries, templates): not counted
        for streams in args.streams:
            figures = await run_batches(args.repeat, streams, model, people, team)
            lone = lone or figures
            ratio = figures["median"] / lone["median"]
            print(
                f"{streams:4} streams: completion median {figures['median']:.2f} s ({ratio:.2f}× a lone turn), "
                f"slowest {figures['slowest']:.2f} s; first token model→socket p50 {figures['first_p50']:.0f} ms, "
                f"p95 {figures['first_p95']:.0f} ms (p95 {figures['first_p95'] - lone['first_p50']:+.0f} ms on a lone "
                f"turn's); CPU {figures['cpu'] * 1000:.0f} ms a stream; "
                f"{figures['lost']} lost, {figures['duplicated']} duplicated events"
            )
    await client.close()
    if process is not None:
        process.kill()


if __name__ == "__main__":
    asyncio.run(main())
