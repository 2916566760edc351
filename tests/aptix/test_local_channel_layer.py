"""The in-memory channel layer of a process without Redis sweeps expired messages at most once a
second instead of at every receive and group send (aptix/local_channel_layer.py): messages and
memberships still expire, and a group send still reaches every member."""

from __future__ import annotations

import asyncio

import pytest

from aptix import local_channel_layer
from aptix.local_channel_layer import LocalChannelLayer


@pytest.mark.asyncio
async def test_a_group_send_reaches_every_member():
    layer = LocalChannelLayer()
    channels = [await layer.new_channel() for _ in range(3)]
    for channel in channels:
        await layer.group_add("session", channel)
    await layer.group_send("session", {"type": "turn.events", "n": 1})
    received = [await asyncio.wait_for(layer.receive(channel), 1) for channel in channels]
    assert received == [{"type": "turn.events", "n": 1}] * 3


@pytest.mark.asyncio
async def test_expired_messages_and_memberships_are_still_swept(monkeypatch):
    layer = LocalChannelLayer(expiry=0, group_expiry=0)
    stale, fresh = await layer.new_channel(), await layer.new_channel()
    await layer.group_add("session", stale)
    await layer.send(stale, {"type": "old"})
    monkeypatch.setattr(local_channel_layer, "CLEAN_EVERY", 0.0)  # every call sweeps, as channels' own layer
    await layer.group_send("session", {"type": "new"})  # sweeps first: the stale channel's message expired
    assert stale not in layer.channels and "session" in layer.groups
    assert stale not in layer.groups["session"]  # a channel with an expired message leaves its groups
    await layer.send(fresh, {"type": "kept"})
    assert fresh in layer.channels


def test_the_sweep_runs_at_most_once_a_second(monkeypatch):
    layer = LocalChannelLayer()
    sweeps = []
    monkeypatch.setattr("channels.layers.InMemoryChannelLayer._clean_expired", lambda self: sweeps.append(1))
    clock = iter([100.0, 100.5, 101.2, 101.3])
    monkeypatch.setattr(local_channel_layer.time, "monotonic", lambda: next(clock))
    for _ in range(4):
        layer._clean_expired()
    assert len(sweeps) == 2  # at 100.0 and 101.2
