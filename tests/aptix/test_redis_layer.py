"""The Redis channel layer keeps what a slow process has yet to read: channels_redis's default
capacity (100 messages) dropped group messages beyond it silently, so a socket of a web process
that stalled for a moment could miss events, a turn's end among them."""

from __future__ import annotations

import pytest
from channels_redis.core import RedisChannelLayer

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
