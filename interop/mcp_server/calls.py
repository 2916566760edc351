"""A tool call's turn while it runs: progress notifications for a client that asks for them, and the
call's cancellation, both without anything kept in one process (mount.py: any process answers any
request).

Progress. A `tools/call` whose `_meta` carries a `progressToken` is answered as an SSE stream (mount.py
gives it to the streaming session manager) and gets `notifications/progress` on that stream while its
turn runs: each step ("Step 2") and each tool the turn calls ("Calling sql__query…"), read from the
session's channel-layer group as the A2A agent's streamed task reads them (interop/progress.py).
`progress` counts what was reported, so it only grows; `total` is never sent: how many steps a turn
takes is known only when it ends (its mode's step limit is a bound, not the total).

Cancellation. The handshake-era protocol (2025-11-25) cancels a call with a `notifications/cancelled`
naming its JSON-RPC id, POSTed on its own: stateless, it reaches any process, never the call's own
task, so the SDK's in-session cancel cannot apply it. Each call therefore records its turn in Django's
cache (shared by every process with REDIS_URL, as the rate limits) under the user, the bearer
credential it came with and its request id; mount.py recognises the notification before the SDK,
after the same authentication, and `cancel` stops the turn recorded under the same three
(agents.turns.turn_cancel, as POST /api/v1/turns/<id>/cancel). A request id names a call only for the
client that chose it, so another user's (or another token's) cancellation never finds the turn. A
cancel that arrives before the call's turn is recorded leaves a mark: a call that finds it before
starting its turn answers at once without one (`cancelled_before`), one that finds it when recording
its turn cancels the turn then.

The 2026-07-28 protocol has no client-to-server notifications over HTTP: the client cancels by
closing the call's response stream. The SDK's streaming entry then cancels the handler (its disconnect
watch), and `follow` cancels the turn. On the handshake-era protocol a closed connection is not a
cancellation (the spec: only the notification cancels a request): whether the handler still waits or
is stopped with the request (Daphne ends an application whose client left after its close timeout),
the turn runs on to its end and its answer stays in the conversation (checked by hand against a live
server: a stream closed mid-call, the turn completed). Either way the cancelled call's result, when
one is still written, goes to a client that has stopped waiting for it (an error result "The turn
ended cancelled."; the SDK's client drops a response to a request it abandoned).
"""

from __future__ import annotations

import contextlib
import hashlib
from typing import TYPE_CHECKING, Any

import anyio
from django.core.cache import cache
from mcp.shared.jsonrpc_dispatcher import progress_token_from_params
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from agents.selectors import turn_continued_aget, turn_of_user_aget
from agents.turns import turn_cancel

from ..progress import Note, Step, follow_run
from . import services

if TYPE_CHECKING:
    from mcp.server.context import ServerRequestContext

    from agents.models import Turn
    from agents.submit import Submitted

KEY_PREFIX = "aptix.mcp.call:"
RUNNING_TTL = 24 * 3600  # seconds a call's turn stays findable (a turn outlives no day-long call)
MARK_TTL = 120  # seconds an early cancel waits for its call's turn, and an ended call's id stays ended
EARLY = "cancelled"  # cancelled before its turn was recorded
ENDED = "ended"  # the call has answered: a late cancel finds nothing to stop
CHAIN_MAX = 8  # turns followed from the call's turn through those that carried its request on


def caller_of(authorization: str) -> str:
    """Which credential a request came with (its Authorization header, hashed: never kept as is)."""
    return hashlib.sha256(authorization.encode()).hexdigest()


def _key(user: Any, caller: str, request_id: Any) -> str:
    """The cache key of the user's call `request_id` made with the credential `caller` (an id as a
    string: 1 and "1" are one call, whichever way a client spells it in its cancel)."""
    name = f"{user.pk}\0{caller}\0{request_id}"
    return KEY_PREFIX + hashlib.sha256(name.encode()).hexdigest()


def _message(item: Step | Note) -> str:
    return f"Step {item.number}" if isinstance(item, Step) else item.text


async def _run(ctx: ServerRequestContext[Any], submitted: Submitted) -> list[Turn]:
    """Wait for the turn (and what carries its request on), reporting its progress when asked to."""
    if progress_token_from_params(ctx.params) is None:
        return await services.finish(submitted)
    reported = 0
    chain: list[Turn] = []
    async with contextlib.aclosing(follow_run(submitted, services.finish)) as items:  # its group left at once
        async for item in items:
            if isinstance(item, list):
                chain = item
            elif isinstance(item, Step | Note):
                reported += 1
                await ctx.session.report_progress(reported, message=_message(item))
    return chain


async def cancelled_before(ctx: ServerRequestContext[Any], *, user: Any, caller: str) -> bool:
    """Whether the call was cancelled before it began (its turn is then never started)."""
    return ctx.request_id is not None and await cache.aget(_key(user, caller, ctx.request_id)) == EARLY


async def follow(ctx: ServerRequestContext[Any], *, user: Any, caller: str, submitted: Submitted) -> Turn:
    """The call's turn run to its end or pause (the last of its chain), recorded for a cancel meanwhile
    and followed for progress; the call cancelled (a 2026-07-28 client closed its stream) cancels it."""
    key = _key(user, caller, ctx.request_id) if ctx.request_id is not None else None
    if key is not None:
        await _record(key, user=user, turn=submitted.turn)
    try:
        chain = await _run(ctx, submitted)
    except anyio.get_cancelled_exc_class():
        if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
            with anyio.CancelScope(shield=True):
                await _cancel_chain(user=user, turn_id=submitted.turn.id)
        raise
    finally:
        if key is not None:
            with anyio.CancelScope(shield=True):
                await cache.aset(key, ENDED, MARK_TTL)
    return chain[-1]


async def _record(key: str, *, user: Any, turn: Turn) -> None:
    if await cache.aadd(key, turn.id, RUNNING_TTL):
        return
    earlier = await cache.aget(key)
    await cache.aset(key, turn.id, RUNNING_TTL)
    if earlier == EARLY:  # its cancellation came first
        await _cancel_chain(user=user, turn_id=turn.id)


async def cancel(*, user: Any, caller: str, request_id: Any) -> bool:
    """Cancel the turn of the user's call `request_id` made with the same credential, if it still
    runs: False when there is none (yet: a call whose turn is recorded later is cancelled then)."""
    key = _key(user, caller, request_id)
    if await cache.aadd(key, EARLY, MARK_TTL):
        return False
    turn_id = await cache.aget(key)
    if turn_id in (None, EARLY, ENDED):
        return False
    return await _cancel_chain(user=user, turn_id=turn_id)


async def _cancel_chain(*, user: Any, turn_id: str) -> bool:
    """Cancel the user's own turn `turn_id`, or the turn that carries its request on after a consented
    switch when it has ended so: False when all of them have ended."""
    turn = await turn_of_user_aget(user=user, turn_id=turn_id)
    for _ in range(CHAIN_MAX):
        if turn is None or turn.session.user_id != user.pk:
            return False
        if await turn_cancel(turn=turn):
            return True
        turn = await turn_continued_aget(turn=turn)
    return False
