"""The run queue of a multi-process deployment: a Redis Stream with one consumer group.

Why Redis Streams (through redis-py, already installed for the channel layer): runs are long async
tasks that a worker holds for minutes while it streams; a stream gives at-least-once delivery with
acknowledgement (a delivered entry stays pending until a worker acks it, and `XAUTOCLAIM` hands
entries a dead consumer read to a live one) without a second broker or a framework that wants to own
the worker's event loop (Celery's prefork workers run one task per process and know nothing of
asyncio; arq would add its own job store beside the database that already records the runs). The
database claim (agents/run/claims.py) makes a duplicate delivery a no-op, so the queue need not be
exactly-once.

A web process `send`s a run (turn id, dispatch token, arguments). A worker (`manage.py
aptix_worker`, agents/run/worker.py) `read`s new entries, claims each run in the database, acks the
entry once the claim is decided, and `reclaim`s entries another consumer read and never acked.
"""

from __future__ import annotations

import asyncio
import json
import weakref
from dataclasses import dataclass
from typing import Any

import redis.asyncio as redis
from django.conf import settings
from redis.exceptions import ResponseError

from aptix.redis_options import REDIS_OPTIONS, SOCKET_TIMEOUT

STREAM = "aptix:runs"
GROUP = "aptix-workers"
BLOCK_SECONDS = 5.0  # a read waits this long for a run; well under the socket timeout
STREAM_MAX_LENGTH = 10_000  # entries kept (approximately): acked runs need none of them
assert BLOCK_SECONDS < SOCKET_TIMEOUT


@dataclass(frozen=True)
class QueuedRun:
    entry_id: str
    turn_id: str
    dispatch: str
    arguments: dict[str, Any]  # client_tools, tool_results
    trace: dict[str, str]  # with tracing on: the turn's traceparent and when it was queued (spans.py)


def queue_client(url: str | None = None) -> redis.Redis:
    url = url or settings.REDIS_URL
    if not url:
        raise RuntimeError("The run queue needs REDIS_URL.")
    return redis.Redis.from_url(url, **REDIS_OPTIONS)


_shared: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, redis.Redis] = weakref.WeakKeyDictionary()


def shared_client() -> redis.Redis:
    """The running loop's client for short commands (a dispatch, the sweep's liveness check): its pool
    keeps connections open. A client made and closed per dispatch was a TCP connection set up and torn
    down per API turn. (A worker's blocking reads keep a client of their own.) Never closed by callers."""
    loop = asyncio.get_running_loop()
    client = _shared.get(loop)
    if client is None:
        client = _shared[loop] = queue_client()
    return client


async def ensure_group(client: redis.Redis) -> None:
    """Create the stream and its consumer group unless they exist."""
    try:
        await client.xgroup_create(STREAM, GROUP, id="0", mkstream=True)
    except ResponseError as exc:
        if "BUSYGROUP" not in str(exc):
            raise


async def send(
    client: redis.Redis, turn_id: str, dispatch: str, arguments: dict[str, Any], trace: dict[str, str] | None = None
) -> str:
    fields = {"turn_id": turn_id, "dispatch": dispatch, "arguments": json.dumps(arguments), **(trace or {})}
    entry = await client.xadd(STREAM, fields, maxlen=STREAM_MAX_LENGTH, approximate=True)  # type: ignore[arg-type]
    return _text(entry)


async def read(client: redis.Redis, consumer: str, *, count: int = 16, block: float = BLOCK_SECONDS) -> list[QueuedRun]:
    """New runs for `consumer` (waits up to `block` seconds for one)."""
    reply: Any = await client.xreadgroup(GROUP, consumer, {STREAM: ">"}, count=count, block=int(block * 1000))
    return [_run(entry_id, fields) for _stream, entries in reply or [] for entry_id, fields in entries]


async def reclaim(client: redis.Redis, consumer: str, *, idle: float, count: int = 16) -> list[QueuedRun]:
    """Runs another consumer read more than `idle` seconds ago and never acked (it died before it
    claimed them), now `consumer`'s."""
    idle_ms = int(idle * 1000)
    reply = await client.xautoclaim(STREAM, GROUP, consumer, min_idle_time=idle_ms, start_id="0-0", count=count)
    entries = reply[1] if reply else []
    return [_run(entry_id, fields) for entry_id, fields in entries if fields]


async def ack(client: redis.Redis, *entry_ids: str) -> None:
    if entry_ids:
        await client.xack(STREAM, GROUP, *entry_ids)


def _alive_key(worker: str) -> str:
    return f"aptix:worker:{worker}"


async def mark_alive(client: redis.Redis, worker: str, ttl: float) -> None:
    """The worker's sign of life, refreshed by its event loop (not by its database thread, which a
    burst of runs can keep busy): a claim is taken from a worker only when this has lapsed."""
    await client.set(_alive_key(worker), "1", px=int(ttl * 1000))


async def alive(client: redis.Redis, workers: list[str]) -> set[str]:
    if not workers:
        return set()
    found = await client.mget([_alive_key(w) for w in workers])
    return {w for w, value in zip(workers, found, strict=True) if value}


def _run(entry_id: Any, fields: dict[Any, Any]) -> QueuedRun:
    values = {_text(k): _text(v) for k, v in fields.items()}
    return QueuedRun(
        entry_id=_text(entry_id),
        turn_id=values.get("turn_id", ""),
        dispatch=values.get("dispatch", ""),
        arguments=json.loads(values.get("arguments") or "{}"),
        trace={k: v for k, v in values.items() if k in TRACE_FIELDS},
    )


TRACE_FIELDS = ("traceparent", "trace_link", "queued_at")


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)
