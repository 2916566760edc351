"""A streamed task's progress: while the turn runs (and the turn that carries it on after a consented
switch), each tool it calls, read from its session's channel-layer group as the page's websocket reads
it (agents/events/channel.py). Only a note for the client: the task's state and answer come from the
turn's row when the run ends, so a note lost on the way costs nothing but the note."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator, Awaitable, Callable
from typing import TYPE_CHECKING, Any

from channels.layers import get_channel_layer

from agents.events.channel import message_events, session_group

if TYPE_CHECKING:
    from agents.models import Turn
    from agents.submit import Submitted

NOTED = {"tool.called": "Calling {name}…"}  # the events a stream notes, and how


def note(event: dict[str, Any]) -> str | None:
    """What the client is told of one of the turn's events, or None."""
    template = NOTED.get(event.get("event", ""))
    payload = event.get("payload") or {}
    return template.format(name=payload.get("name") or "a tool") if template else None


async def follow_run(
    submitted: Submitted, finish: Callable[[Submitted], Awaitable[list[Turn]]]
) -> AsyncGenerator[str | list[Turn]]:
    """Yield a note for each tool the run calls, then the chain `finish` returns when it ends."""
    layer = get_channel_layer()
    run = asyncio.ensure_future(finish(submitted))
    if layer is None:
        yield await run
        return
    channel = await layer.new_channel()
    group = session_group(submitted.turn.session_id)
    await layer.group_add(group, channel)
    try:
        while not run.done():
            receiving = asyncio.ensure_future(layer.receive(channel))
            await asyncio.wait({run, receiving}, return_when=asyncio.FIRST_COMPLETED)
            if not receiving.done():
                receiving.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await receiving
                continue
            for event in message_events(receiving.result()):
                if (text := note(event)) is not None:
                    yield text
        yield run.result()
    finally:
        if not run.done():  # the client went away: the run goes on without it (runs hold no request)
            run.cancel()
        await layer.group_discard(group, channel)
