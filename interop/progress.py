"""A running turn's progress for a client of the interop servers (the A2A agent's streamed task, the
MCP server's progress notifications), read from its session's channel-layer group as the page's
websocket reads it (agents/events/channel.py) while the turn runs (and the turn that carries it on
after a consented switch): each step it starts, each tool it calls (a note) and the reply's pieces as
the model writes them (a step's pieces restart the answer: what a step wrote before calling tools is
not the answer). Only a preview for the client: the task's state and whole answer come from the
turn's row when the run ends, so anything lost on the way costs nothing but the preview."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncGenerator, Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from channels.layers import get_channel_layer

from agents.events.channel import message_events, session_group

if TYPE_CHECKING:
    from agents.models import Turn
    from agents.submit import Submitted

logger = logging.getLogger("aptix.interop")
NOTED = {"tool.called": "Calling {name}…"}  # the events a stream notes, and how


@dataclass(frozen=True)
class Note:
    """What the turn does now (a tool it calls)."""

    text: str


@dataclass(frozen=True)
class Step:
    """A step of the run began (its number in the turn, from 1)."""

    number: int


@dataclass(frozen=True)
class Piece:
    """A piece of the reply; `restart`: the first of a step's (the answer so far is replaced)."""

    text: str
    restart: bool


def note(event: dict[str, Any]) -> Note | None:
    """What the client is told of one of the turn's events, or None."""
    template = NOTED.get(event.get("event", ""))
    payload = event.get("payload") or {}
    return Note(template.format(name=payload.get("name") or "a tool")) if template else None


async def follow_run(
    submitted: Submitted, finish: Callable[[Submitted], Awaitable[list[Turn]]]
) -> AsyncGenerator[Step | Note | Piece | list[Turn]]:
    """Yield a Step as each step of the run begins, a Note for each tool it calls and the reply's
    Pieces, then the chain `finish` returns when the run ends."""
    layer = get_channel_layer()
    run = asyncio.ensure_future(finish(submitted))
    if layer is None:
        yield await run
        return
    channel = await layer.new_channel()
    group = session_group(submitted.turn.session_id)
    await layer.group_add(group, channel)
    restart = True
    try:
        while not run.done():
            receiving = asyncio.ensure_future(layer.receive(channel))
            await asyncio.wait({run, receiving}, return_when=asyncio.FIRST_COMPLETED)
            if not receiving.done():
                receiving.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await receiving
                continue
            try:
                message = receiving.result()
            except Exception:  # a channel-layer hiccup: the preview stops there, the answer still comes
                logger.warning("Stopped following turn %s's events", submitted.turn.id, exc_info=True)
                await asyncio.wait({run})
                break
            for event in message_events(message):
                if event.get("event") == "step.started":
                    restart = True
                    yield Step(int((event.get("payload") or {}).get("step") or 0))
                elif event.get("event") == "model.delta" and (text := (event.get("payload") or {}).get("text")):
                    yield Piece(text, restart)
                    restart = False
                elif (noted := note(event)) is not None:
                    yield noted
        yield run.result()
    finally:
        if not run.done():  # the client went away: the run goes on without it (runs hold no request)
            run.cancel()
        await layer.group_discard(group, channel)
