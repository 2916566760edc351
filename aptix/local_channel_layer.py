"""The channel layer of a process without Redis (the embedded default of `make run`): channels'
in-memory layer, with its sweep of expired messages and group memberships run at most once every
CLEAN_EVERY seconds instead of at every receive and every group send.

The sweep walks every channel and every group's members: with 500 sockets open in one process, each
of the ~20 group sends a turn makes, and each socket's receive, walked all 500 — a cost per stream
that grew with the number of streams (a tenth of the process's CPU at 200 streams,
bench/streams_concurrency.py under py-spy). Messages expire after 60 s and memberships after a day,
so sweeping once a second changes nothing anyone can see: an expired message is never delivered
later than a second after its expiry would have dropped it, and a full channel still refuses at its
capacity as before.

It overrides a private method of channels' layer, so the channels version is pinned in pyproject.toml
and tests/aptix/test_local_channel_layer.py checks that expiry still works."""

from __future__ import annotations

import time

from channels.layers import InMemoryChannelLayer

CLEAN_EVERY = 1.0  # seconds between two sweeps of expired messages and memberships


class LocalChannelLayer(InMemoryChannelLayer):
    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._swept = float("-inf")

    def _clean_expired(self) -> None:
        now = time.monotonic()
        if now - self._swept < CLEAN_EVERY:
            return
        self._swept = now
        super()._clean_expired()
