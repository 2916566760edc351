"""The Redis channel layer: channels_redis's, with a group send of two round trips instead of four,
and a receive of one round trip instead of three when a message is waiting.

A run sends each written batch of events to its session's group (agents/events/channel.py): about
twenty group sends a turn. channels_redis 4.3's `group_send` makes four round trips for each (drop
expired members, read the members, drop each member key's expired messages in a pipeline, then an
EVAL carrying its whole script) and was a sixth of a worker's CPU at 100 turns at once (scale-out
bench, py-spy --gil). Here it is one round trip: the process remembers each group's members as last
read, and one script (run by its SHA) drops the group's expired members, checks that the members
are still those, and only then adds the message to each member's key, dropping that key's expired
messages first. When the members changed, the script sends nothing and returns them: the message is
built for those and sent again (so a group's first send, and the first after a join or a leave, take
two). With more than one Redis host (keys of one send on several servers) the members are read
first, as channels_redis does, and the send is the same script. What it does is unchanged: the
same keys, the same per-channel message (`_map_channel_keys_to_connection`, serialized once per
process key), the same capacity rule, expiry and log line.

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

# KEYS: the group's key, then its members' channel keys. ARGV: now, the message expiry, the oldest
# membership kept (older ones expired), the number of members the message was built for (-1: send
# without checking) and those members in the group's order, then the keys' messages, then their
# capacities. Returns {-1, members} without sending when the members are not those, else {channels
# over capacity}.
GROUP_SEND = """
local n = tonumber(ARGV[4])
if n >= 0 then
    redis.call('ZREMRANGEBYSCORE', KEYS[1], 0, ARGV[3])
    local members = redis.call('ZRANGE', KEYS[1], 0, -1)
    local same = #members == n
    for i = 1, n do
        if not same then break end
        same = members[i] == ARGV[4 + i]
    end
    if not same then
        table.insert(members, 1, -1)
        return members
    end
else
    n = 0
end
local k = #KEYS - 1
local now = ARGV[1]
local expiry = tonumber(ARGV[2])
local oldest = math.floor(tonumber(now)) - expiry
local over = 0
for i = 1, k do
    local key = KEYS[i + 1]
    redis.call('ZREMRANGEBYSCORE', key, 0, oldest)
    if redis.call('ZCOUNT', key, '-inf', '+inf') < tonumber(ARGV[4 + n + k + i]) then
        redis.call('ZADD', key, now, ARGV[4 + n + i])
        redis.call('EXPIRE', key, expiry)
    else
        over = over + 1
    end
end
return {over}
"""
# Groups whose members a process remembers: past this many it forgets them all, and reads each again at
# its next send (a clear, not an eviction order: sync code sends too, from asgiref's threads).
REMEMBERED_GROUPS = 10_000
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
        # Each group's members as this process last read them.
        self._members: dict[str, list[bytes]] = {}

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
        members = self._members.get(group)
        if members is None or self.ring_size > 1:  # unknown, or the channels' keys may be on other hosts
            members = await self._read_members(connection, key)
        for _ in range(3):
            reply = await self._send(group, key, members, message)
            if reply[0] != -1:
                break
            members = reply[1:]  # the members changed since last read: for these, again
        else:  # changing under every send: read and send as channels_redis does, whatever changes
            members = await self._read_members(connection, key)
            reply = await self._send(group, key, members, message, check=False)
        if len(self._members) >= REMEMBERED_GROUPS:
            self._members.clear()
        self._members[group] = members
        if reply[0] > 0:
            logger.info("%s of %s channels over capacity in group %s", reply[0], len(members), group)

    async def _read_members(self, connection: Any, key: str) -> list[bytes]:
        async with connection.pipeline(transaction=False) as pipe:
            pipe.zremrangebyscore(key, min=0, max=int(time.time()) - self.group_expiry)
            pipe.zrange(key, 0, -1)
            _, members = await pipe.execute()
        return members

    async def _send(
        self, group: str, key: str, members: list[bytes], message: dict[str, Any], *, check: bool = True
    ) -> list[Any]:
        """The message to `members` (the script's reply), if they are still the group's (`check`)."""
        channel_names = [member.decode("utf8") for member in members]
        to_keys, to_message, to_capacity = self._map_channel_keys_to_connection(channel_names, message)
        if not to_keys:
            to_keys = {self.consistent_hash(group): []}  # nobody to send to, if nobody joined since
        now = time.time()
        over = 0
        for index, keys in to_keys.items():
            # The membership check goes with the send on the group's host; with several hosts the
            # members were just read, and the other hosts' keys are sent to without it.
            checked = check and index == self.consistent_hash(group) and self.ring_size == 1
            expected = members if checked else []
            args = [
                now,
                int(self.expiry),
                int(now) - self.group_expiry,
                len(expected) if checked else -1,
                *expected,
                *(to_message[k] for k in keys),
                *(to_capacity[k] for k in keys),
            ]
            reply = await _script(self.connection(index), GROUP_SEND_SHA, GROUP_SEND, [key, *keys], args)
            if reply[0] == -1:
                return reply
            over += reply[0]
        return [over]
