"""Turn services and run dispatch. A run does not depend on the request that started it.

One process (the embedded default): runs are asyncio tasks on the server's event loop. With
REDIS_URL: runs are sent over the channel layer to `manage.py runworker aptix-runs` processes, and a
cancel is a flag in the database that the worker's watcher sees within half a second.
"""
from __future__ import annotations

import asyncio
import contextvars
import logging
from datetime import timedelta
from typing import Any

from asgiref.sync import sync_to_async
from channels.consumer import AsyncConsumer
from channels.layers import get_channel_layer
from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Max
from django.utils import timezone

from .events import FINAL_EVENT_TYPES, broadcast_written, message_events, session_group
from .models import AgentSession, Execution, Turn, TurnEvent

logger = logging.getLogger("aptix.runs")

RUN_CHANNEL = "aptix-runs"
CANCEL_POLL_INTERVAL = 0.5
MAX_MESSAGE_LENGTH = 100_000

ERROR_EMPTY_MESSAGE = "The message is empty."
ERROR_MESSAGE_TOO_LONG = f"The message is longer than {MAX_MESSAGE_LENGTH} characters."
ERROR_TURN_RUNNING = "A turn is still running in this session. Wait for it to finish or stop it."

_tasks: dict[str, asyncio.Task] = {}


def turn_start(*, session: AgentSession, text: str, execution: str | None = None) -> Turn:
    """Create the next turn of `session` (status queued) in the session's persisted mode."""
    text = (text or "").strip()
    if not text:
        raise ValidationError({"message": ERROR_EMPTY_MESSAGE})
    if len(text) > MAX_MESSAGE_LENGTH:
        raise ValidationError({"message": ERROR_MESSAGE_TOO_LONG})
    execution = execution or session.execution
    if execution not in Execution.values:
        raise ValidationError({"execution": "Execution must be 'ask' or 'agent'."})
    with transaction.atomic():
        locked = AgentSession.objects.select_for_update().get(pk=session.pk)
        end_orphans(locked)
        busy = locked.turns.filter(status__in=[Turn.Status.QUEUED, Turn.Status.RUNNING]).exists()
        if busy:
            raise ValidationError(ERROR_TURN_RUNNING)
        index = (locked.turns.aggregate(m=Max("index"))["m"] or 0) + 1
        turn = Turn.objects.create(
            session=locked, index=index, user_message=text, mode=locked.mode, execution=execution,
        )
        if not locked.title:
            locked.title = text[:80]
        locked.save(update_fields=["title", "updated_at"])
    return turn


ERROR_INTERRUPTED = "This turn was interrupted because the server stopped while it ran."
ERROR_NO_WORKER = ("No worker picked this turn up. Start one with `manage.py runworker aptix-runs` "
                   "(REDIS_URL is set, so turns run in worker processes).")
ORPHAN_QUEUED_AFTER = timedelta(minutes=1)
LEASE_HEARTBEATS = 6  # a running turn silent for this many heartbeat intervals lost its process


def lease() -> timedelta:
    return timedelta(seconds=settings.APTIX_RUN_HEARTBEAT * LEASE_HEARTBEATS)


def end_orphans(session: AgentSession) -> list[str]:
    """End the turns of `session` that nothing runs any more, so they do not block it for ever;
    returns their ids. One process: a turn open with no task here is left over from a stopped
    server. With workers: a running turn whose heartbeat stopped (its worker died), or one queued
    for longer than a minute (no worker took it; the channel layer drops undelivered runs then).
    Each ends `failed` with a `turn.failed` event saying why."""
    now = timezone.now()
    stale: dict[str, str] = {}
    for turn in session.turns.filter(status__in=[Turn.Status.QUEUED, Turn.Status.RUNNING]):
        queued_too_long = turn.status == Turn.Status.QUEUED and now - turn.created_at > ORPHAN_QUEUED_AFTER
        if not settings.REDIS_URL:
            if turn.pk not in _tasks and (turn.status == Turn.Status.RUNNING or queued_too_long):
                stale[turn.pk] = ERROR_INTERRUPTED
        elif turn.status == Turn.Status.RUNNING:
            if now - (turn.heartbeat_at or turn.started_at or turn.created_at) > lease():
                stale[turn.pk] = ERROR_INTERRUPTED
        elif queued_too_long:
            stale[turn.pk] = ERROR_NO_WORKER
    for turn_id, error in stale.items():
        _end_unrun(session.pk, turn_id, from_statuses=[Turn.Status.QUEUED, Turn.Status.RUNNING],
                   status=Turn.Status.FAILED, event_type="turn.failed",
                   payload={"error": error, "kind": "interrupted"}, mode=session.mode, error=error, now=now)
    if stale:
        logger.warning("Ended %d interrupted turn(s) of session %s", len(stale), session.pk,
                       extra={"event": "runs.orphans_ended", "session_id": session.pk, "turn_ids": list(stale)})
    return list(stale)


def _end_unrun(session_id: str, turn_id: str, *, from_statuses: list[str], status: str, event_type: str,
               payload: dict, mode: str, error: str = "", now=None) -> bool:
    """End a turn that no run holds (so no EventRecorder): its row and its final event in one
    transaction, broadcast once committed. False if it had left `from_statuses` meanwhile."""
    with transaction.atomic():
        updated = Turn.objects.filter(pk=turn_id, status__in=from_statuses).update(
            status=status, error=error, finished_at=now or timezone.now(), response_mode=mode, state={})
        if not updated:
            return False
        seq = (TurnEvent.objects.filter(turn_id=turn_id).aggregate(m=Max("seq"))["m"] or 0) + 1
        event = TurnEvent.objects.create(turn_id=turn_id, seq=seq, type=event_type, payload={
            **payload, "status": status, "answer": "", "mode": mode, "mode_changes": [], "branch": None})
        transaction.on_commit(lambda: broadcast_written(session_id, turn_id, [event]))
    return True


async def run_turn(turn_id: str, **kwargs: Any) -> Turn:
    from .reasoner import Reasoner

    keeper = asyncio.create_task(_keep_alive(turn_id, asyncio.current_task()))
    try:
        return await Reasoner().run(turn_id, **kwargs)
    finally:
        keeper.cancel()


async def _keep_alive(turn_id: str, run_task: asyncio.Task | None) -> None:
    """While the run lives: its heartbeat (the run writes the first with turn.started), and with
    workers the cancel flag, since the HTTP request that asks for it may be served by another process."""
    loop = asyncio.get_running_loop()
    beat_at = loop.time() + settings.APTIX_RUN_HEARTBEAT
    while True:
        wait = max(0.0, beat_at - loop.time())
        await asyncio.sleep(min(wait, CANCEL_POLL_INTERVAL) if settings.REDIS_URL else wait)
        if loop.time() >= beat_at:
            beat_at = loop.time() + settings.APTIX_RUN_HEARTBEAT
            await Turn.objects.filter(pk=turn_id, finished_at__isnull=True).aupdate(heartbeat_at=timezone.now())
        if settings.REDIS_URL and await Turn.objects.filter(pk=turn_id, cancel_requested=True).aexists():
            if run_task is not None:
                run_task.cancel()
            return


def dispatch(turn_id: str, **kwargs: Any) -> asyncio.Task | None:
    """Start the run: a task on this event loop, or a message to the worker processes."""
    if settings.REDIS_URL and not kwargs.get("local"):
        layer = get_channel_layer()
        return asyncio.get_running_loop().create_task(
            layer.send(RUN_CHANNEL, {"type": "run.turn", "turn_id": turn_id, **_serialisable(kwargs)})
        )
    kwargs.pop("local", None)
    return _start_task(turn_id, run_turn(turn_id, **kwargs))


def _start_task(turn_id: str, coro) -> asyncio.Task:
    """A run outlives the request that started it. It gets an empty context: a copy of the request's
    would tie its sync_to_async calls to the request's thread executor, which ends with the request
    ("CurrentThreadExecutor already quit")."""
    task = asyncio.get_running_loop().create_task(coro, name=f"turn-{turn_id}", context=contextvars.Context())
    _tasks[turn_id] = task
    task.add_done_callback(lambda _t: _tasks.pop(turn_id, None))
    return task


def _serialisable(kwargs: dict) -> dict:
    return {k: v for k, v in kwargs.items() if k in {"client_tools", "tool_results"}}


async def turn_cancel(*, turn: Turn) -> bool:
    """Ask a running turn to stop. Returns False when it had already finished."""
    if turn.is_finished:
        return False
    await Turn.objects.filter(pk=turn.pk).aupdate(cancel_requested=True)
    task = _tasks.get(turn.pk)
    if task is not None and not task.done():
        task.cancel()
    elif not settings.REDIS_URL:
        # Nothing runs it in this process (queued, or waiting for client tool results): end it now.
        await _end_cancelled(turn)
    return True


async def _end_cancelled(turn: Turn) -> None:
    await sync_to_async(_end_unrun)(
        turn.session_id, turn.pk, from_statuses=[Turn.Status.QUEUED, Turn.Status.REQUIRES_ACTION],
        status=Turn.Status.CANCELLED, event_type="turn.cancelled", payload={"reason": "Stopped by the user."},
        mode=turn.mode)


async def wait_for_turn(turn_id: str, task: asyncio.Task | None = None) -> Turn:
    """Wait until the turn ends (or needs client tool results) and return it fresh."""
    if task is not None:
        await asyncio.shield(task)
    else:
        layer = get_channel_layer()
        turn = await Turn.objects.aget(pk=turn_id)
        channel = await layer.new_channel()
        group = session_group(turn.session_id)
        await layer.group_add(group, channel)
        try:
            while True:
                turn = await Turn.objects.aget(pk=turn_id)
                if turn.is_finished or turn.status == Turn.Status.REQUIRES_ACTION:
                    break
                try:
                    async with asyncio.timeout(5):  # then look at the turn again
                        message = await layer.receive(channel)
                except TimeoutError:
                    continue
                if any(e["turn_id"] == turn_id and e["event"] in FINAL_EVENT_TYPES
                       for e in message_events(message)):
                    break
        finally:
            await layer.group_discard(group, channel)
    return await Turn.objects.select_related("session").aget(pk=turn_id)


class RunWorkerConsumer(AsyncConsumer):
    """`manage.py runworker aptix-runs`: runs turns dispatched over the channel layer.

    Channels hands every message of the channel to this one consumer in turn, so a handler that
    awaited the whole run would make a worker run one turn at a time: each run is a task instead.
    """

    async def run_turn(self, message: dict) -> None:
        turn_id = message["turn_id"]
        _start_task(turn_id, run_turn(turn_id, client_tools=message.get("client_tools"),
                                      tool_results=message.get("tool_results")))
