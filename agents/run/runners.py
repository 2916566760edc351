"""Where runs execute. A run does not depend on the request that started it.

- `LocalRunner` (the embedded default): runs are asyncio tasks on this process's event loop.
- `WorkerRunner` (`REDIS_URL` set): runs go on the run queue (agents/run/queue.py, a Redis Stream)
  to `manage.py aptix_worker` processes (agents/run/worker.py), which claim each in the database
  (agents/run/claims.py) and run it as a task; a cancel is a flag in the database that the worker's
  watcher sees within half a second. Events still reach sockets over the channel layer.

Both implement one interface (the port in agents/runner.py); `agents.runner.get_runner()` picks one
from settings, once.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
from collections.abc import Mapping
from datetime import datetime
from functools import partial
from typing import Any, ClassVar

from asgiref.sync import sync_to_async
from channels.layers import get_channel_layer
from django.conf import settings
from django.db import connection
from django.db.models import Max, Q, QuerySet
from django.db.models.functions import Coalesce
from django.utils import timezone

from aptix import logcontext, tracing
from tools.registry import ToolRegistry, mcp_registry

from ..branching import switch_continues, turn_continue_after_switch
from ..elicitations import ERROR_LOST as ELICITATION_LOST
from ..events import FINAL_EVENT_TYPES, message_events, session_news_group, sidebar_moves
from ..models import Turn, TurnEvent
from ..runner import get_runner
from ..submit import turn_submit
from ..turns import ERROR_INTERRUPTED, ERROR_NO_WORKER, run_stopped, turn_cancel_unrun, turn_end_orphans
from . import queue
from .asking import waiting_questions
from .claims import (
    ORPHAN_QUEUED_AFTER,
    lease,
    lease_expired,
    orphan_queued_too_long,
    run_dispatch,
    run_resume_tasks,
    stalled_queued,
    task_lost,
    unheld,
)
from .context import warm_encodings
from .leases import Leases
from .spans import TurnTrace, dispatch_span, local_trace, queued_fields, turn_ended, turn_span
from .titles import title_session, wants_title

logger = logging.getLogger("aptix.runs")
RUN_ARGUMENTS = ("client_tools", "tool_results")  # what a run takes besides its turn


class Runner:
    """Starts, stops and awaits runs. The tasks of the runs this process holds are in `tasks`."""

    kind: ClassVar[str]
    polls_cancel: ClassVar[bool]  # the held runs' cancel flags are looked at (leases.py)
    ends_unheld_turns: ClassVar[bool]  # a turn no task here holds is nobody's: cancel ends it here

    def __init__(self, *, mcp: ToolRegistry | None = None) -> None:
        self.mcp = mcp if mcp is not None else mcp_registry  # the MCP tools runs may offer
        self._tasks: dict[str, asyncio.Task] = {}
        self._sweeper: asyncio.Task | None = None
        self._titling: set[asyncio.Task] = set()  # sessions being named (titles.py): held until done
        self.leases = Leases(polls_cancel=self.polls_cancel)  # the heartbeats and cancel checks of its runs

    @property
    def tasks(self) -> Mapping[str, asyncio.Task]:
        return self._tasks

    def start(
        self, turn_id: str, *, client_tools: list[dict] | None = None, tool_results: list[dict] | None = None
    ) -> asyncio.Task:
        raise NotImplementedError

    async def wait(self, turn_id: str, started: asyncio.Task | None = None, *, session_id: str = "") -> Turn:
        """Wait until the turn ends (or needs client tool results) and return it fresh (with its
        session). `session_id`: the turn's, when the caller has it (saves a read)."""
        raise NotImplementedError

    def orphan_reason(self, turn: Turn, now: datetime) -> str | None:
        """Why nothing runs this open turn any more (it is then ended), or None."""
        raise NotImplementedError

    def orphan_candidates(self, turns: QuerySet[Turn], now: datetime) -> QuerySet[Turn]:
        """The open turns `orphan_reason` may pick, narrowed in SQL where the runner can say so."""
        return turns

    def unheld(self, turn: Turn, now: datetime) -> bool:
        """Whether no process runs the open turn (a Stop then ends it at once)."""
        return self.ends_unheld_turns

    def run_here(
        self, turn_id: str, *, worker: str = "", trace: TurnTrace | None = None, **arguments: Any
    ) -> asyncio.Task:
        """Run the turn as a task of this process (`worker`: the name its claim is held under;
        `trace`: where its span hangs, spans.py). It gets an empty context: a copy of the request's
        would tie its sync_to_async calls to the request's thread executor, which ends with the
        request ("CurrentThreadExecutor already quit")."""
        coro = self._run(turn_id, worker, trace, **{k: arguments.get(k) for k in RUN_ARGUMENTS})
        context = contextvars.Context()
        context.run(logcontext.bind, request_id=logcontext.current().get("request_id"))  # its log lines' ids
        task = asyncio.get_running_loop().create_task(coro, name=f"turn-{turn_id}", context=context)
        self._tasks[turn_id] = task
        task.add_done_callback(lambda _t: self._tasks.pop(turn_id, None))
        return task

    def stop(self, turn_id: str) -> bool:
        """Cancel the run if this process holds it."""
        task = self._tasks.get(turn_id)
        if task is None or task.done():
            return False
        task.cancel()
        return True

    def start_sweeping(self, interval: float | None = None) -> None:
        """End orphaned turns every `interval` seconds on this loop (the server's start-up hook)."""
        if self._sweeper is None or self._sweeper.done():
            self._sweeper = asyncio.get_running_loop().create_task(
                self._sweep_forever(interval or settings.APTIX_RUN_HEARTBEAT),
                name="turn-sweeper",
                context=contextvars.Context(),
            )

    async def _sweep_forever(self, interval: float) -> None:
        while True:
            try:
                await self.sweep()
            except Exception:  # a database or Redis hiccup must not end the sweeping
                logger.exception("The orphan sweep failed; it runs again in %s s", interval)
            await asyncio.sleep(interval)

    async def sweep(self) -> None:
        """Hand on the running turns whose process died during an MCP task of an HTTP server (run
        again, they follow the task: claims.run_resume_tasks), then end the orphans."""
        for turn_id in await sync_to_async(run_resume_tasks)(self.holds):
            logger.warning("Turn %s resumed: its MCP task outlived its process", turn_id, extra={"turn_id": turn_id})
            await self.resume(turn_id)
        await sync_to_async(turn_end_orphans)(runner=self)

    def holds(self, turn: Turn) -> bool:
        """Whether a process still runs the running turn (else its MCP task is handed on)."""
        raise NotImplementedError

    async def resume(self, turn_id: str) -> None:
        """Run again a running turn whose process died during its MCP task (run_resume_tasks)."""
        raise NotImplementedError

    async def _run(self, turn_id: str, worker: str, trace: TurnTrace | None, **arguments: Any) -> Turn:
        from .reasoner import Reasoner

        async with turn_span(turn_id, trace) as span:
            reasoner = Reasoner(mcp=self.mcp)
            # read when a renewal fails or a cancel is found, not now
            ended = lambda: reasoner.ended_here or reasoner.stopping  # noqa: E731
            self.leases.hold(turn_id, asyncio.current_task(), worker, ended)
            try:
                turn = await reasoner.run(turn_id, **arguments)
            finally:
                self.leases.release(turn_id)
            turn_ended(span, turn)
        try:
            await run_stopped.asend(sender=Turn, turn=turn)
        except Exception:  # a receiver's failure is its own: the run has ended (or paused) all the same
            logger.exception("A receiver of turn %s's stop failed", turn.id, extra={"turn_id": turn.id})
        if switch_continues(turn):  # its end is written (the run drained its events): carry the request on
            await _continue_after_switch(turn)
        if wants_title(turn):  # a task of its own: a title never holds up the turn (or what waits for it)
            self._titling.add(task := asyncio.get_running_loop().create_task(title_session(turn)))
            task.add_done_callback(self._titling.discard)
        return turn


class LocalRunner(Runner):
    kind = "local"
    # A Stop cancels the task at once (stop()); the flag it sets is looked at too, as on a worker, so
    # that a cancel dropped on the way (by a library in the run's awaits: a CI run once streamed a
    # stopped turn to its end) still stops the run within CANCEL_POLL_INTERVAL.
    polls_cancel = True
    ends_unheld_turns = True

    def start(
        self, turn_id: str, *, client_tools: list[dict] | None = None, tool_results: list[dict] | None = None
    ) -> asyncio.Task:
        return self.run_here(turn_id, trace=local_trace(), client_tools=client_tools, tool_results=tool_results)

    async def wait(self, turn_id: str, started: asyncio.Task | None = None, *, session_id: str = "") -> Turn:
        task = started if started is not None else self._tasks.get(turn_id)
        if task is not None:
            await sync_to_async(release_connection)()
            # Until the run ends, or pauses for an MCP server's question (its task waits on: asking.py).
            asked = asyncio.ensure_future(waiting_questions.until_asked(turn_id))
            try:
                await asyncio.wait({task, asked}, return_when=asyncio.FIRST_COMPLETED)
            finally:
                asked.cancel()
        turn = await Turn.objects.select_related("session").aget(pk=turn_id)
        if turn.status == Turn.Status.QUEUED and turn.cancel_requested and (task is None or task.done()):
            # Stopped before its run took the turn (a cancel right after the dispatch, as the A2A agent's
            # and the MCP server's can be): a run cancelled while it loads the turn, or before its task's
            # first step, writes no end. The turn is ended here, as one nothing ran.
            await sync_to_async(turn_cancel_unrun)(turn)
            turn = await Turn.objects.select_related("session").aget(pk=turn_id)
        return turn

    def holds(self, turn: Turn) -> bool:
        return turn.pk in self._tasks  # one process: a turn no task here runs is left over

    async def resume(self, turn_id: str) -> None:
        self.run_here(turn_id, trace=local_trace())

    def orphan_reason(self, turn: Turn, now: datetime) -> str | None:
        # One process: an open turn with no task here is left over from a stopped server.
        if turn.status == Turn.Status.AWAITING_APPROVAL:  # an MCP server's question (turn_end_orphans)
            return ELICITATION_LOST if turn.pk not in self._tasks else None
        if turn.pk not in self._tasks and (turn.status == Turn.Status.RUNNING or orphan_queued_too_long(turn, now)):
            return task_lost(turn) or ERROR_INTERRUPTED
        return None


class WorkerRunner(Runner):
    kind = "worker"
    polls_cancel = True
    ends_unheld_turns = False

    def start(
        self, turn_id: str, *, client_tools: list[dict] | None = None, tool_results: list[dict] | None = None
    ) -> asyncio.Task:
        arguments = {"client_tools": client_tools, "tool_results": tool_results}
        # An empty context, as for a run (run_here): a copy of the request's would tie the dispatch's
        # sync_to_async calls to the request's thread, gone once a view that does not wait for the
        # dispatch (the home composer's redirect) has answered.
        dispatch = self._dispatch(turn_id, arguments, tracing.current_traceparent())
        return asyncio.get_running_loop().create_task(
            dispatch, name=f"dispatch-{turn_id}", context=contextvars.Context()
        )

    @staticmethod
    async def _dispatch(turn_id: str, arguments: dict[str, Any], traceparent: str = "") -> int:
        """Put the run on the queue; the turn's last event before it (what `wait` waits past: a
        paused turn being resumed is still paused until a worker takes it). `traceparent`: the
        dispatching request's span (with tracing on), which the entry carries on (spans.py)."""
        with dispatch_span(traceparent):
            before, token = await sync_to_async(_dispatch_row)(turn_id)
            trace = await queued_fields(turn_id, tracing.current_traceparent())  # the turn hangs under this span
            await queue.send(queue.shared_client(), turn_id, token, arguments, trace)
        return before

    def unheld(self, turn: Turn, now: datetime) -> bool:
        return unheld(turn, now)

    def holds(self, turn: Turn) -> bool:
        return not lease_expired(turn, timezone.now())

    async def resume(self, turn_id: str) -> None:
        await self._dispatch(turn_id, {})

    async def sweep(self) -> None:
        """Re-queue the queued runs whose worker died before they started (safe: nothing of them
        ran), then end the orphans."""
        stalled = await sync_to_async(stalled_queued)(timezone.now())
        if stalled:
            living = await queue.alive(queue.shared_client(), sorted(set(stalled.values())))
            for turn_id, worker in stalled.items():
                if worker not in living:
                    logger.warning("Re-queued turn %s: its worker is gone", turn_id, extra={"event": "runs.requeued"})
                    await self._dispatch(turn_id, {})
        await super().sweep()

    async def wait(self, turn_id: str, started: asyncio.Task | None = None, *, session_id: str = "") -> Turn:
        """Follow the session's events until the turn's final one (looking at the row now and then).
        Each look at the row hands the thread's connection back in the same hop to the thread."""
        layer = get_channel_layer()
        session_id = session_id or (await Turn.objects.values_list("session_id", flat=True).aget(pk=turn_id))
        dispatched_after = await started if started is not None else None
        channel = await layer.new_channel()
        group = session_news_group(session_id)  # not the reply's pieces: they change nothing here
        await layer.group_add(group, channel)
        try:
            while True:
                turn = await sync_to_async(_turn_then_release)(turn_id)
                if turn.is_finished or (turn.is_paused and await _moved_past(turn_id, dispatched_after)):
                    return turn
                if await _final_or_news(layer, channel, turn_id):
                    break
        finally:
            await layer.group_discard(group, channel)
        return await Turn.objects.select_related("session").aget(pk=turn_id)

    def orphan_reason(self, turn: Turn, now: datetime) -> str | None:
        # (Paused turns are never orphans: no process holds them, by design.)
        # A running turn whose heartbeat stopped (its worker died), or one queued for longer than a
        # minute (no worker took it; the channel layer drops undelivered runs then).
        if turn.status == Turn.Status.RUNNING:
            return (task_lost(turn) or ERROR_INTERRUPTED) if lease_expired(turn, now) else None
        if turn.status == Turn.Status.AWAITING_APPROVAL:  # an MCP server's question (turn_end_orphans)
            return ELICITATION_LOST if lease_expired(turn, now) else None
        if orphan_queued_too_long(turn, now):
            return ERROR_NO_WORKER
        return None

    def orphan_candidates(self, turns: QuerySet[Turn], now: datetime) -> QuerySet[Turn]:
        # What orphan_reason picks, in SQL: every process sweeps every heartbeat, and 100 running turns
        # fetched (with their sessions) to be let go were most of a sweep, four processes over.
        queued_long = Q(status=Turn.Status.QUEUED, created_at__lt=now - ORPHAN_QUEUED_AFTER)
        lease_ended = Q(lease_until__lt=now) | Q(lease_until__isnull=True, last_sign__lt=now - lease())
        return turns.alias(last_sign=Coalesce("heartbeat_at", "started_at", "created_at")).filter(
            queued_long | (~Q(status=Turn.Status.QUEUED) & lease_ended)
        )


def _dispatch_row(turn_id: str) -> tuple[int, str]:
    """The turn's last event's seq before this dispatch (0: none), and the dispatch's token."""
    before = TurnEvent.objects.filter(turn_id=turn_id).aggregate(m=Max("seq"))["m"] or 0
    return before, run_dispatch(turn_id)


def _turn_then_release(turn_id: str) -> Turn:
    """The turn (with its session), read before the thread's connection is released."""
    turn = Turn.objects.select_related("session").get(pk=turn_id)
    release_connection()
    return turn


def release_connection() -> None:
    """Hand the calling thread's database connection back (to the pool, or closed) while it waits for a
    run, which may take minutes: a request waiting for its turn (the JSON API) must not hold one of the
    process's few pooled connections, or the pool caps how many API turns a process serves at once
    (measured: 9 of 100 with a pool of 10, the rest queued for a connection before being recorded).
    Left alone inside a transaction. The next query of the thread takes a connection again."""
    if not connection.in_atomic_block:
        connection.close()


# A turn's events that never come with a pause (approval, an MCP server's question, client tools):
# the waiting request does not read the turn's row again for them (a read each was a fifth of a
# web process's queries per API turn).
_NOT_A_PAUSE = frozenset({"model.delta", "turn.started", "step.started", "model.retry", "tool.progress", "tool.task"})


async def _final_or_news(layer: Any, channel: str, turn_id: str) -> bool:
    """Wait (at most 5 s) on the session's news group for news of the turn: True once its final event
    came; False when the turn's row should be looked at again (a timeout, or an event of the turn a
    pause may come with). The reply's pieces (model.delta) are not sent to that group."""
    try:
        async with asyncio.timeout(5):
            while True:
                message = await layer.receive(channel)
                events = [e for e in message_events(message) if e["turn_id"] == turn_id]
                if any(e["event"] in FINAL_EVENT_TYPES for e in events):
                    return True
                if any(e["event"] not in _NOT_A_PAUSE for e in events):
                    return False
    except TimeoutError:
        return False


def start_runs() -> None:
    """Start-up hook of a serving process (Daphne, aptix_worker): sweep orphaned turns now and on a
    timer; gather the sidebar's notes on it (events/channel.py SidebarMoves). Must be called on the
    serving event loop. The tokenizer is imported meanwhile on a thread (context.py `warm_encodings`),
    not by the first turn."""
    sidebar_moves.bind(asyncio.get_running_loop())
    asyncio.get_running_loop().run_in_executor(None, warm_encodings)
    if settings.APTIX_RUN_SWEEP:
        get_runner().start_sweeping()


async def _continue_after_switch(turn: Turn) -> None:
    """Start the follow-up of a turn that switched its session's mode with the user's consent, through
    the one way runs start (this process's runner: a task here, or the run queue with workers)."""
    try:
        await turn_submit(partial(turn_continue_after_switch, turn_id=turn.id))
    except Exception:  # the switching turn has ended well: a failed follow-up must not undo it
        logger.exception("Could not continue turn %s after its mode switch", turn.id, extra={"turn_id": turn.id})


async def _moved_past(turn_id: str, seq: int | None) -> bool:
    """Whether the turn has events after `seq` (None: nothing to wait past); the connection goes back
    in the same hop."""
    return seq is None or await sync_to_async(_moved_past_then_release)(turn_id, seq)


def _moved_past_then_release(turn_id: str, seq: int) -> bool:
    try:
        return TurnEvent.objects.filter(turn_id=turn_id, seq__gt=seq).exists()
    finally:
        release_connection()
