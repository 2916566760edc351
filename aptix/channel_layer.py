"""The Redis channel layer: channels_redis's, with a group send of two round trips instead of four,
and a receive of one round trip instead of three when a message is waiting.

A run sends each written batch of events to its session's group (agents/events/channel.py): about
twenty group sends a turn. channels_redis 4.3's `group_send` makes four round trips for each (drop
expired members, read the members, drop each member key's expired messages in a pipeline, then an
EVAL carrying its whole script) and was a sixth of a worker's CPU at 100 turns at once (scale-out
bench, py-spy --gil). Here the first two are one pipeline, and the expired messages are dropped by the
script itself, run by its SHA. What it does is unchanged: the same keys, the same per-channel
message (`_map_channel_keys_to_connection`, serialized once per process key), the same capacity
rule, expiry and log line.

Receiving, channels_redis runs a script putting back what an interrupted receive left in the
channel's backup set, then BZPOPMIN, then ZADDs the message to the backup set, and once the message
is handed over a task ZPOPMINs it from the backup set: four round trips a message, for every event a
web process's sockets get (the last one, with redis-py's connection checkout, was a fifth of a web
process's CPU at 100 turns at once). Here one script does the first three when a message is waiting
(the usual case under load). On a process's own channel ("specific.…!", which no other process
reads) the handed-over message is dropped from the backup set by the next receive's script instead
of a round trip of its own; an interrupted receive's message is still put back and delivered. An
empty channel blocks in BZPOPMIN as before.

It relies on channels_redis's internals, so the version is pinned in pyproject.toml and
tests/aptix/test_redis_layer.py runs it against a real Redis.
"""

from __future__ import annotations

import hashlib
import logging
import time
from typing import Any

from channels_redis.core import RedisChannelLayer as ChannelsRedisLayer
from redis.exceptions import NoScriptError

logger = logging.getLogger(__name__)

# KEYS: the channels' Redis keys; ARGV: their messages, then their capacities, then now and the
# message expiry. Each key's messages older than the expiry go first (channels_redis did that in a
# pipeline of its own), then the message is added unless the key is at capacity.
GROUP_SEND = """
local n = #KEYS
local now = ARGV[2 * n + 1]
local expiry = tonumber(ARGV[2 * n + 2])
local oldest = math.floor(tonumber(now)) - expiry
local over = 0
for i = 1, n do
    redis.call('ZREMRANGEBYSCORE', KEYS[i], 0, oldest)
    if redis.call('ZCOUNT', KEYS[i], '-inf', '+inf') < tonumber(ARGV[n + i]) then
        redis.call('ZADD', KEYS[i], now, ARGV[i])
        redis.call('EXPIRE', KEYS[i], expiry)
    else
        over = over + 1
    end
end
return over
"""
# KEYS: none; ARGV: the channel's key, its backup set's key, and "1" when what the backup set holds
# was handed over (else it is put back first: what channels_redis's cleanup script does). Then a
# non-blocking pop whose message goes to the backup set, as its BZPOPMIN's did.
POP_WAITING = """
if ARGV[3] ~= '1' then
    local backed_up = redis.call('ZRANGE', ARGV[2], 0, -1, 'WITHSCORES')
    for i = #backed_up, 1, -2 do
        redis.call('ZADD', ARGV[1], backed_up[i], backed_up[i - 1])
    end
end
redis.call('DEL', ARGV[2])
local popped = redis.call('ZPOPMIN', ARGV[1])
if popped[1] then
    redis.call('ZADD', ARGV[2], popped[2], popped[1])
    return popped[1]
end
return false
"""
POP_WAITING_SHA = hashlib.sha1(POP_WAITING.encode()).hexdigest()

GROUP_SEND_SHA = hashlib.sha1(GROUP_SEND.encode()).hexdigest()  # Redis names scripts by their SHA-1


async def _script(connection: Any, sha: str, script: str, keys: list[Any], args: list[Any]) -> Any:
    try:
        return await connection.evalsha(sha, len(keys), *keys, *args)
    except NoScriptError:  # a Redis restarted or flushed since: EVAL caches it again
        return await connection.eval(script, len(keys), *keys, *args)


class RedisChannelLayer(ChannelsRedisLayer):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # This process's own channels whose backup set holds only a message already handed over.
        self._handed_over: set[str] = set()

    async def _brpop_with_clean(self, index: int, channel: str, timeout: float) -> Any:
        connection = self.connection(index)
        backup = self._backup_channel_name(channel)
        # Taken before the script runs: a receive cancelled meanwhile may have the message again
        # (as channels_redis's cancelled cleaner may), never lose it.
        handed_over = channel in self._handed_over
        self._handed_over.discard(channel)
        member = await _script(connection, POP_WAITING_SHA, POP_WAITING, [], [channel, backup, int(handed_over)])
        if member is not None:
            return member
        # Nothing waiting, and the script emptied the backup set: block, backed up as channels_redis does.
        popped = await connection.bzpopmin(channel, timeout=timeout)
        if popped is None:
            return None
        _, member, score = popped
        await connection.zadd(backup, {member: float(score)})
        return member

    async def _clean_receive_backup(self, index: int, channel: str) -> None:
        """The message was handed over. On this process's own channel the next receive's script drops
        it from the backup set; elsewhere (a channel other processes read) it goes now, as before."""
        if channel.endswith("!"):
            self._handed_over.add(channel)
        else:
            await super()._clean_receive_backup(index, channel)

    async def group_send(self, group: str, message: dict[str, Any]) -> None:
        assert self.require_valid_group_name(group), "Group name not valid"
        key = self._group_key(group)
        connection = self.connection(self.consistent_hash(group))
        async with connection.pipeline(transaction=False) as pipe:
            pipe.zremrangebyscore(key, min=0, max=int(time.time()) - self.group_expiry)
            pipe.zrange(key, 0, -1)
            _, members = await pipe.execute()
        channel_names = [member.decode("utf8") for member in members]
        to_keys, to_message, to_capacity = self._map_channel_keys_to_connection(channel_names, message)
        for index, keys in to_keys.items():
            args = [to_message[k] for k in keys] + [to_capacity[k] for k in keys] + [time.time(), int(self.expiry)]
            over = await _script(self.connection(index), GROUP_SEND_SHA, GROUP_SEND, keys, args)
            if over > 0:
                logger.info("%s of %s channels over capacity in group %s", over, len(channel_names), group)
