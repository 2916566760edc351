"""Starting a run: record what starts it, then dispatch it — the one service through which the
workspace's views and the JSON API start (or continue) a turn.

What starts a run is recorded first by a sync service in its own transaction (`turn_start`,
`conversations.session_start` / `turn_resend`, `branching.session_branch`, `approvals.approval_decide`,
the API's claim of client tool results), run on a worker thread; a recording that raises (a
ValidationError naming the field) dispatches nothing. The run is then dispatched on the calling
event loop, which the runner needs: a run or its dispatch is a task of the serving loop, started in
an empty context (agents/run/runners.py) so that it outlives the request that started it."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from typing import overload

from asgiref.sync import sync_to_async

from aptix import logcontext, tracing

from .models import Turn
from .runner import get_runner


@dataclass(frozen=True)
class Submitted:
    turn: Turn
    started: asyncio.Task  # the run (or, with workers, its dispatch): what `Runner.wait` takes


@overload
async def turn_submit(
    record: Callable[[], Turn], *, client_tools: list[dict] | None = None, tool_results: list[dict] | None = None
) -> Submitted: ...


@overload
async def turn_submit(
    record: Callable[[], Turn | None],
    *,
    client_tools: list[dict] | None = None,
    tool_results: list[dict] | None = None,
) -> Submitted | None: ...


async def turn_submit(
    record: Callable[[], Turn | None],
    *,
    client_tools: list[dict] | None = None,
    tool_results: list[dict] | None = None,
) -> Submitted | None:
    """Call `record` (a sync service returning the turn to run, or None when there is nothing to run)
    on a worker thread, then dispatch the turn's run with the API client's tools and tool results.
    Must be awaited on the serving event loop (an async view)."""
    with tracing.span("turn.record"):  # the recording's transaction, in the request's trace
        turn = await sync_to_async(record)()
    if turn is None:
        return None
    logcontext.bind(turn_id=turn.id, session_id=turn.session_id)  # the request's further log lines
    started = get_runner().start(turn.id, client_tools=client_tools, tool_results=tool_results)
    return Submitted(turn=turn, started=started)
