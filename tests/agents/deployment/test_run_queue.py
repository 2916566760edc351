"""The run queue: at-least-once delivery through a Redis Stream, an atomic claim in
the database so a duplicate delivery is a no-op, connections that survive idle periods longer than
every default timeout, Stop ending an orphan at once, and a run a dead worker claimed but never
started re-queued. Real Redis, real PostgreSQL and a real `aptix_worker` subprocess
(tests/helpers/worker_process.py has the fixtures)."""

from __future__ import annotations

import asyncio

import pytest
from asgiref.sync import sync_to_async
from django.utils import timezone

from agents.models import Turn, TurnEvent
from agents.run import queue
from agents.run.claims import lease, run_claim, run_dispatch
from agents.runner import get_runner
from agents.turns import turn_cancel, turn_start
from aptix.redis_options import redis_channel_layers
from tests.helpers import async_db
from tests.helpers.worker_process import REDIS_URL

pytestmark = [pytest.mark.slow, async_db]

DEFAULT_REDIS_SOCKET_TIMEOUT = 5.0  # redis-py 8's, which killed idle workers and sockets


async def _until_status(turn_id: str, statuses: set[str], timeout: float = 30) -> Turn:
    """Another process moves the turn: the database is where to look."""
    async with asyncio.timeout(timeout):
        while (turn := await Turn.objects.aget(pk=turn_id)).status not in statuses:
            await asyncio.sleep(0.1)
    return turn


async def test_one_dispatch_is_claimed_once(make_session):
    session = await make_session()
    turn = await sync_to_async(turn_start)(session=session, text="Hi")
    token = await sync_to_async(run_dispatch)(turn.id)
    claims = await asyncio.gather(*(sync_to_async(run_claim)(turn.id, token, f"w{i}") for i in range(5)))
    assert sorted(claims) == [False, False, False, False, True]
    assert not await sync_to_async(run_claim)(turn.id, "an-old-token", "w9")  # a stale delivery
    redispatched = await sync_to_async(run_dispatch)(turn.id)  # a new dispatch is claimable again
    assert await sync_to_async(run_claim)(turn.id, redispatched, "w1")


async def test_a_duplicate_delivery_runs_the_turn_once(worker, redis_layer, make_session):
    worker.reply("Only once.")
    session = await make_session()
    turn = await sync_to_async(turn_start)(session=session, text="Hi")
    token = await sync_to_async(run_dispatch)(turn.id)
    client = queue.queue_client()
    try:
        for _ in range(3):  # what channels_redis's re-queue did: the same run delivered again
            await queue.send(client, turn.id, token, {})
        turn = await _until_status(turn.id, {Turn.Status.COMPLETED, Turn.Status.FAILED})
        assert turn.status == Turn.Status.COMPLETED and turn.answer == "Only once."
        async with asyncio.timeout(10):  # every delivery was decided (acked), not left pending
            while (await client.xpending(queue.STREAM, queue.GROUP))["pending"]:
                await asyncio.sleep(0.1)
    finally:
        await client.aclose()
    assert worker.calls == 1  # the model saw one request
    seqs = [e.seq async for e in TurnEvent.objects.filter(turn_id=turn.id).order_by("seq")]
    assert seqs == list(range(1, len(seqs) + 1))


async def test_idle_connections_outlive_every_default_timeout(worker, redis_layer, make_session):
    layer = redis_layer
    channel = await layer.new_channel()
    with pytest.raises(TimeoutError):  # our own timeout, not redis-py's TimeoutError
        async with asyncio.timeout(DEFAULT_REDIS_SOCKET_TIMEOUT * 1.6):
            await layer.receive(channel)  # an idle socket's receive: BRPOP for 5 s, again and again
    assert worker.process.poll() is None  # the worker sat idle just as long and lives
    worker.reply("Still here.")
    session = await make_session()
    turn = await sync_to_async(turn_start)(session=session, text="Hi")
    await get_runner().start(turn.id)
    turn = await _until_status(turn.id, {Turn.Status.COMPLETED, Turn.Status.FAILED})
    assert turn.answer == "Still here."


def test_the_shipped_channel_layer_waits_less_than_its_socket_timeout():
    hosts = redis_channel_layers("redis://example")["default"]["CONFIG"]["hosts"]
    from channels_redis.core import RedisChannelLayer

    assert hosts[0]["socket_timeout"] > RedisChannelLayer.brpop_timeout
    assert hosts[0]["socket_timeout"] > queue.BLOCK_SECONDS


async def test_stop_ends_a_dead_workers_turn_at_once(worker, redis_layer, make_session):
    worker.reply("word " * 400, chunk_delay=0.05)
    session = await make_session()
    turn = await sync_to_async(turn_start)(session=session, text="Talk for a long time")
    await get_runner().start(turn.id)
    await asyncio.wait_for(worker.requested.wait(), timeout=20)
    worker.process.kill()  # SIGKILL: its lease will not be renewed
    await asyncio.to_thread(worker.process.wait, 10)
    held = await _until_status(turn.id, {Turn.Status.RUNNING})
    await Turn.objects.filter(pk=turn.id).aupdate(lease_until=timezone.now() - lease())  # the lease ran out
    assert await turn_cancel(turn=held)
    ended = await Turn.objects.aget(pk=turn.id)
    assert ended.status == Turn.Status.CANCELLED  # at once: no worker would ever see the flag
    last = await ended.events.order_by("-seq").afirst()
    assert last.type == "turn.cancelled"


async def test_a_run_a_dead_worker_claimed_but_never_started_is_requeued(worker, redis_layer, make_session):
    worker.reply("Ran after all.")
    session = await make_session()
    turn = await sync_to_async(turn_start)(session=session, text="Hi")
    token = await sync_to_async(run_dispatch)(turn.id)
    assert await sync_to_async(run_claim)(turn.id, token, "a-worker-that-died")  # and then it died
    await Turn.objects.filter(pk=turn.id).aupdate(lease_until=timezone.now() - lease() / 2)
    await get_runner().sweep()  # expired, but maybe a busy worker that has not written its start yet
    assert (await Turn.objects.aget(pk=turn.id)).worker == "a-worker-that-died"
    await Turn.objects.filter(pk=turn.id).aupdate(lease_until=timezone.now() - 2 * lease())
    client = queue.queue_client()
    try:  # a worker that lives (its loop refreshes its sign) only fell behind: its run is left to it
        await queue.mark_alive(client, "a-worker-that-died", ttl=60)
        await get_runner().sweep()
        assert (await Turn.objects.aget(pk=turn.id)).worker == "a-worker-that-died"
        await client.delete("aptix:worker:a-worker-that-died")  # now it is gone
    finally:
        await client.aclose()
    await get_runner().sweep()  # the sweep of any process: safe to run again, nothing of it ran
    turn = await _until_status(turn.id, {Turn.Status.COMPLETED, Turn.Status.FAILED})
    assert turn.status == Turn.Status.COMPLETED and turn.answer == "Ran after all." and worker.calls == 1


@pytest.mark.skipif(not REDIS_URL, reason="needs Redis")
async def test_the_stream_keeps_a_run_until_a_worker_reads_it():
    client = queue.queue_client(REDIS_URL)
    try:
        await queue.ensure_group(client)
        await queue.ensure_group(client)  # idempotent
        entry = await queue.send(client, "t" * 32, "d" * 32, {"client_tools": None})
        runs = [r for r in await queue.read(client, "test-consumer", block=1) if r.entry_id == entry]
        assert [(r.turn_id, r.dispatch, r.arguments) for r in runs] == [("t" * 32, "d" * 32, {"client_tools": None})]
        reclaimed = [r.entry_id for r in await queue.reclaim(client, "other-consumer", idle=0, count=1000)]
        assert entry in reclaimed  # read but not acked: another consumer may take it
        await queue.ack(client, entry)
        reclaimed = [r.entry_id for r in await queue.reclaim(client, "other-consumer", idle=0, count=1000)]
        assert entry not in reclaimed
    finally:
        await client.aclose()
