"""Benchmark: the Redis channel layer's group send and receive, channels_redis's against ours.

A run broadcasts each batch of events it writes to its session's group (about twenty a turn), and a
web process receives each on its own channel for its sockets. This sends `--sends` messages to a group
whose two members are channels of another layer object (another process's sockets), then receives
`--sends` waiting messages on one channel of the same process, with channels_redis 4.3's layer and
with ours (aptix/channel_layer.py), alternately (`--rounds` rounds), and prints the CPU and wall
time each operation took in this process, and the Redis commands each made (INFO commandstats;
commands a script runs count too).

    bin/with-redis .venv/bin/python bench/channel_layer.py [--sends 3000] [--rounds 2]

(`make bench` runs it so; it needs a Redis URL in APTIX_TEST_REDIS_URL, as bin/with-redis exports
it, or REDIS_URL.)
"""

from __future__ import annotations

import argparse
import asyncio
import os
import time

from benchenv import setup_django

MESSAGE = {"type": "turn.events", "events": [{"seq": 1, "event": "model.delta", "payload": {"text": "hello " * 10}}]}


async def _commands(connection) -> dict[str, int]:
    stats = await connection.info("commandstats")
    return {name.removeprefix("cmdstat_"): value["calls"] for name, value in stats.items()}


def _delta(before: dict[str, int], after: dict[str, int], n: int) -> str:
    made = {name: (after[name] - before.get(name, 0)) / n for name in after}
    return ", ".join(f"{name} {count:g}" for name, count in sorted(made.items()) if count and name != "info")


async def measure(layer_class, url: str, sends: int) -> None:
    from aptix.redis_options import redis_channel_layers

    config = redis_channel_layers(url)["default"]["CONFIG"]
    layer, other = layer_class(**config), layer_class(**config)
    try:
        members = [await other.new_channel() for _ in range(2)]
        for member in members:
            await other.group_add("session_bench", member)
        await layer.group_send("session_bench", MESSAGE)  # the first send reads the members
        connection = layer.connection(0)
        before, cpu, wall = await _commands(connection), time.process_time(), time.perf_counter()
        for _ in range(sends):
            await layer.group_send("session_bench", MESSAGE)
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
        after = await _commands(connection)
        name = f"{layer_class.__module__}.{layer_class.__name__}"
        print(
            f"  {name:42} group send: {1e6 * cpu / sends:4.0f} us CPU, {1e6 * wall / sends:4.0f} us wall; "
            f"Redis commands a send: {_delta(before, after, sends)}"
        )

        channel = await layer.new_channel()
        for _ in range(sends):
            await layer.send(channel, MESSAGE)
        await layer.receive(channel)  # the first receive starts the process's receive loop
        before, cpu, wall = await _commands(connection), time.process_time(), time.perf_counter()
        for _ in range(sends - 1):
            await layer.receive(channel)
        await asyncio.sleep(0)  # channels_redis's backup cleaners are tasks: let the last one run
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
        after = await _commands(connection)
        print(
            f"  {name:42} receive:    {1e6 * cpu / (sends - 1):4.0f} us CPU, {1e6 * wall / (sends - 1):4.0f} us wall; "
            f"Redis commands a receive: {_delta(before, after, sends - 1)}"
        )
    finally:
        for each in (layer, other):
            await each.flush()
            await each.close_pools()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sends", type=int, default=3000)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    setup_django(DEBUG="false")
    url = os.environ.get("APTIX_TEST_REDIS_URL") or os.environ.get("REDIS_URL")
    if not url:
        raise SystemExit("needs Redis: run under bin/with-redis (or set REDIS_URL)")
    from channels_redis.core import RedisChannelLayer as ChannelsRedisLayer

    from aptix.channel_layer import RedisChannelLayer

    print(f"{args.sends} group sends to two channels of another process, then {args.sends} waiting messages received")
    for round_ in range(1, args.rounds + 1):
        print(f"round {round_}:")
        for layer_class in (ChannelsRedisLayer, RedisChannelLayer):
            asyncio.run(measure(layer_class, url, args.sends))


if __name__ == "__main__":
    main()
