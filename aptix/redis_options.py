"""How every Redis connection of Aptix is made (the channel layer, the run queue, the cache).

redis-py 8 reads a reply for at most `socket_timeout` seconds, 5 by default, which equals the 5 s
that channels_redis blocks in BRPOP waiting for a message: an idle socket or worker raised
`redis.exceptions.TimeoutError` about 5 s after it went quiet (web processes closed idle
websockets with 1011; runworker processes died). Every blocking read here (BRPOP, XREADGROUP
BLOCK) is shorter than SOCKET_TIMEOUT, so a timeout now means a dead server, not a quiet one;
keepalive and the health check find connections a NAT or proxy dropped while idle.
"""

from __future__ import annotations

from typing import Any

SOCKET_TIMEOUT = 30.0  # seconds a reply may take; above every blocking read's own timeout
CONNECT_TIMEOUT = 5.0
HEALTH_CHECK_INTERVAL = 15  # seconds idle before a connection is PINGed when next used
# Messages waiting for one process's sockets (channels_redis keeps them in one Redis key per
# process) and for each socket in that process. Past this, channels_redis drops a group message
# silently (logged at INFO): a viewer would miss an event, even a turn's end. Its default, 100, is
# a few seconds of a busy process's streams; a web process that stalls for a moment under load
# must not lose what was sent meanwhile. A few thousand small fragments are a few MB of Redis.
CHANNEL_CAPACITY = 5000

REDIS_OPTIONS: dict[str, Any] = {
    "socket_timeout": SOCKET_TIMEOUT,
    "socket_connect_timeout": CONNECT_TIMEOUT,
    "socket_keepalive": True,
    "health_check_interval": HEALTH_CHECK_INTERVAL,
}


def redis_channel_layers(url: str) -> dict[str, Any]:
    """CHANNEL_LAYERS for a Redis server at `url`, with the connection options above."""
    return {
        "default": {
            "BACKEND": "aptix.channel_layer.RedisChannelLayer",  # channels_redis's, cheaper group sends
            "CONFIG": {"hosts": [{"address": url, **REDIS_OPTIONS}], "capacity": CHANNEL_CAPACITY},
        }
    }
