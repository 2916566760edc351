"""The Redis channel layer keeps what a slow process has yet to read: channels_redis's default
capacity (100 messages) dropped group messages beyond it silently, so a socket of a web process
that stalled for a moment could miss events, a turn's end among them. Its group send
(aptix/channel_layer.py: two round trips, not four) does what channels_redis's does: every member
gets the message, members of one process through their process's key, a full channel is skipped,
expired messages are dropped first, and a Redis that forgot the script gets it again."""

from __future__ import annotations

import asyncio
import time

import pytest
from channels_redis.core import RedisChannelLayer as ChannelsRedisLayer

from aptix.channel_layer import RedisChannelLayer
from aptix.redis_options import CHANNEL_CAPACITY, redis_channel_layers
from tests.helpers.worker_process import REDIS_URL

MESSAGES = 300


@pytest.fixture
async def layer():
    if not REDIS_URL:
        pytest.skip("needs Redis (make test starts one)")
    config = redis_channel_layers(REDIS_URL)["default"]["CONFIG"]
    layer = RedisChannelLayer(**config)
    yield layer
    await layer.flush()
    await layer.close_pools()


async def test_a_burst_to_a_socket_that_is_not_reading_is_kept_whole(layer):
    assert CHANNEL_CAPACITY >= MESSAGES
    channel = await layer.new_channel()
    await layer.group_add("session_burst", channel)
    for seq in range(1, MESSAGES + 1):  # the socket's process is busy: nothing is read meanwhile
        await layer.group_send("session_burst", {"type": "turn.events", "seq": seq})
    received = [(await layer.receive(channel))["seq"] for _ in range(MESSAGES)]
    assert received == list(range(1, MESSAGES + 1))


def test_the_deployments_layer_is_ours():
    assert redis_channel_layers("redis://x")["default"]["BACKEND"] == "aptix.channel_layer.RedisChannelLayer"


async def test_a_group_send_reaches_every_member_as_channels_redis_does(layer):
    other = ChannelsRedisLayer(**redis_channel_layers(REDIS_URL)["default"]["CONFIG"])  # another process
    try:
        mine, mine_too, theirs, plain = (
            await layer.new_channel(),
            await layer.new_channel(),
            await other.new_channel(),
            "plain.channel",
        )
        for channel in (mine, mine_too, theirs, plain):
            await layer.group_add("session_members", channel)
        await layer.group_send("session_members", {"type": "turn.events", "seq": 1})
        got = [await asyncio.wait_for(x.receive(c), 5) for x, c in ((layer, mine), (layer, mine_too), (other, theirs))]
        got.append(await asyncio.wait_for(layer.receive(plain), 5))
        assert [m["seq"] for m in got] == [1, 1, 1, 1]
    finally:
        await other.flush()
        await other.close_pools()


async def test_a_full_channel_is_skipped_and_expired_messages_go_first(layer):
    layer.capacity, layer.channel_capacity = 2, []
    full, spare = "full.channel", "spare.channel"
    for channel in (full, spare):
        await layer.group_add("session_capacity", channel)
    await layer.send(full, {"type": "x", "n": 0})
    await layer.send(full, {"type": "x", "n": 0})
    await layer.group_send("session_capacity", {"type": "x", "n": 1})
    assert [(await asyncio.wait_for(layer.receive(full), 5))["n"] for _ in range(2)] == [0, 0]  # not the third
    assert (await asyncio.wait_for(layer.receive(spare), 5))["n"] == 1

    connection = layer.connection(layer.consistent_hash(full))
    key = layer.prefix + full
    await connection.zadd(key, {b"stale": time.time() - layer.expiry - 5, b"stale too": time.time() - layer.expiry - 5})
    await layer.group_send("session_capacity", {"type": "x", "n": 2})  # the stale ones go, so it fits
    assert (await asyncio.wait_for(layer.receive(full), 5))["n"] == 2


async def test_a_redis_that_forgot_the_script_gets_it_again(layer):
    channel = await layer.new_channel()
    await layer.group_add("session_flushed", channel)
    await layer.connection(0).script_flush()
    await layer.group_send("session_flushed", {"type": "x", "n": 3})
    assert (await asyncio.wait_for(layer.receive(channel), 5))["n"] == 3


async def test_receiving_a_waiting_message_a_later_one_and_one_an_interrupted_receive_left(layer):
    """The receive's one-trip path (a message waiting), its blocking path (none yet), and what a
    receive cancelled between its pop and the hand-over left in the backup set: delivered first."""
    channel = "plain.receiver"
    await layer.send(channel, {"type": "x", "n": 1})
    assert (await asyncio.wait_for(layer.receive(channel), 5))["n"] == 1  # it was waiting

    later = asyncio.create_task(layer.receive(channel))
    await asyncio.sleep(0.2)  # the receive blocks: nothing waits yet
    await layer.send(channel, {"type": "x", "n": 2})
    assert (await asyncio.wait_for(later, 5))["n"] == 2

    key = layer.prefix + channel
    connection = layer.connection(0)
    await layer.send(channel, {"type": "x", "n": 4})
    await connection.zadd(layer._backup_channel_name(key), {layer.serialize({"type": "x", "n": 3}): time.time() - 1})
    received = [(await asyncio.wait_for(layer.receive(channel), 5))["n"] for _ in range(2)]
    assert received == [3, 4]
    async with asyncio.timeout(5):  # handed over, so its cleaner empties the backup set: nothing to redo
        while await connection.zcard(layer._backup_channel_name(key)):
            await asyncio.sleep(0.01)


async def test_a_process_channel_receives_a_waiting_message_in_one_round_trip_and_never_again(layer):
    """On this process's own channel a waiting message costs one Redis command (the script), not a
    script and then a ZPOPMIN from the backup set; the message handed over is dropped from the backup
    set by the next receive, so it is not delivered twice."""
    channel = await layer.new_channel()
    connection = layer.connection(layer.consistent_hash(channel))
    for n in (1, 2, 3):
        await layer.send(channel, {"type": "x", "n": n})
    before = await _command_counts(connection)
    received = [(await asyncio.wait_for(layer.receive(channel), 5))["n"] for _ in range(3)]
    after = await _command_counts(connection)
    assert received == [1, 2, 3]
    assert after["evalsha"] - before["evalsha"] == 3
    assert after["zpopmin"] - before["zpopmin"] == 3  # Redis counts the scripts' own: no ZPOPMIN of its own
    assert after["eval"] - before["eval"] == 0

    await layer.send(channel, {"type": "x", "n": 4})
    assert (await asyncio.wait_for(layer.receive(channel), 5))["n"] == 4  # not 3 again
    later = asyncio.create_task(layer.receive(channel))  # nothing waits: it blocks, and gets the next
    await asyncio.sleep(0.2)
    await layer.send(channel, {"type": "x", "n": 5})
    assert (await asyncio.wait_for(later, 5))["n"] == 5
    backup = layer._backup_channel_name(layer.prefix + layer.non_local_name(channel))
    assert await connection.zcard(backup) == 1  # only the message handed over last, until the next receive


async def _command_counts(connection) -> dict[str, int]:
    stats = await connection.info("commandstats")
    return {name: stats.get(f"cmdstat_{name}", {}).get("calls", 0) for name in ("evalsha", "zpopmin", "eval")}


def _count_round_trips(layer) -> list[str]:
    """The commands and pipelines the layer's connection sends from now on, one entry a round trip
    (the redis client's own methods, counted on this instance)."""
    trips: list[str] = []
    connection = layer.connection(0)
    execute, pipeline = connection.execute_command, connection.pipeline

    async def counted_execute(*args, **kwargs):
        trips.append(str(args[0]))
        return await execute(*args, **kwargs)

    def counted_pipeline(*args, **kwargs):
        trips.append("pipeline")
        return pipeline(*args, **kwargs)

    connection.execute_command, connection.pipeline = counted_execute, counted_pipeline
    return trips


async def test_a_group_send_is_one_round_trip_while_the_members_stay_and_sees_who_joined_or_left(layer):
    other = RedisChannelLayer(**redis_channel_layers(REDIS_URL)["default"]["CONFIG"])  # another process
    try:
        mine, theirs = await layer.new_channel(), await other.new_channel()
        await layer.group_add("session_steady", mine)
        await layer.group_send("session_steady", {"type": "x", "n": 1})  # the first: members read, then sent
        trips = _count_round_trips(layer)
        await layer.group_send("session_steady", {"type": "x", "n": 2})
        assert trips == ["EVALSHA"]

        await other.group_add("session_steady", theirs)  # joins in another process
        trips.clear()
        await layer.group_send("session_steady", {"type": "x", "n": 3})
        assert trips == ["EVALSHA", "EVALSHA"]  # refused for the old members, then sent to the new
        assert [(await asyncio.wait_for(layer.receive(mine), 5))["n"] for _ in range(3)] == [1, 2, 3]
        assert (await asyncio.wait_for(other.receive(theirs), 5))["n"] == 3  # from its join on

        await layer.group_discard("session_steady", mine)  # leaves
        await layer.group_send("session_steady", {"type": "x", "n": 4})
        assert (await asyncio.wait_for(other.receive(theirs), 5))["n"] == 4
        await layer.send(mine, {"type": "x", "n": 0})
        assert (await asyncio.wait_for(layer.receive(mine), 5))["n"] == 0  # not 4: it had left

        trips.clear()
        await layer.group_send("session_nobody", {"type": "x", "n": 5})  # no members: nothing is sent
        await layer.group_send("session_nobody", {"type": "x", "n": 5})
        assert trips == ["pipeline", "EVALSHA", "EVALSHA"]
    finally:
        await other.flush()
        await other.close_pools()


async def test_an_expired_membership_gets_nothing(layer):
    channel = await layer.new_channel()
    await layer.group_add("session_expiring", channel)
    await layer.group_send("session_expiring", {"type": "x", "n": 1})  # members now remembered
    group = layer._group_key("session_expiring")
    connection = layer.connection(0)
    await connection.zadd(group, {channel: time.time() - layer.group_expiry - 5})  # joined long ago
    await layer.group_send("session_expiring", {"type": "x", "n": 2})
    assert await connection.zcard(group) == 0
    assert (await asyncio.wait_for(layer.receive(channel), 5))["n"] == 1
    await layer.send(channel, {"type": "x", "n": 3})
    assert (await asyncio.wait_for(layer.receive(channel), 5))["n"] == 3  # 2 never came


async def test_past_the_groups_it_remembers_a_process_forgets_them_and_reads_again(layer, monkeypatch):
    monkeypatch.setattr("aptix.channel_layer.REMEMBERED_GROUPS", 2)
    channel = await layer.new_channel()
    for name in ("session_a", "session_b", "session_c"):
        await layer.group_add(name, channel)
        await layer.group_send(name, {"type": "x", "n": name})
    assert set(layer._members) == {"session_c"}  # a and b forgotten when c came
    trips = _count_round_trips(layer)
    await layer.group_send("session_a", {"type": "x", "n": "again"})
    assert trips == ["pipeline", "EVALSHA"]  # read again, then sent
    received = [(await asyncio.wait_for(layer.receive(channel), 5))["n"] for _ in range(4)]
    assert received == ["session_a", "session_b", "session_c", "again"]
