"""A running tool call's progress (MCP `notifications/progress`) as `tool.progress` events, coalesced:
the first report goes at once, then at most one event per PROGRESS_INTERVAL, always the newest
report, so a server that reports a thousand times a second costs the stream two events a second. And a
call its MCP server runs as a task: its statuses as `tool.task` events (TaskRelay)."""

from __future__ import annotations

import asyncio
import math
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from ..events import EventRecorder
from ..events.payloads import ToolProgress, ToolTask
from ..events.writer import TurnWrite

PROGRESS_INTERVAL = 0.5  # seconds between two tool.progress events of one call
PROGRESS_MESSAGE_CHARS = 200


class ProgressRelay:
    """Use as `async with ProgressRelay(recorder, id, name) as relay:` around the call, passing
    `relay.report` (sync, on the run's loop) as the progress callback. Reports that arrive after the
    call ended are dropped: its result says more."""

    def __init__(self, recorder: EventRecorder, call_id: str, name: str) -> None:
        self.recorder = recorder
        self.call_id = call_id
        self.name = name
        self._latest: ToolProgress | None = None
        self._new = asyncio.Event()
        self._task: asyncio.Task | None = None
        self._open = False

    async def __aenter__(self) -> ProgressRelay:
        self._open = True
        return self

    async def __aexit__(self, *exc: object) -> None:
        self._open = False
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)

    def report(self, progress: float, total: float | None, message: str | None) -> None:
        if not self._open or not _finite(progress):
            return
        self._latest = {
            "id": self.call_id,
            "name": self.name,
            "progress": progress,
            "total": total if total is not None and _finite(total) and total > 0 else None,
            "message": (message or "").strip()[:PROGRESS_MESSAGE_CHARS],
        }
        self._new.set()
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._send())

    async def _send(self) -> None:
        while True:
            await self._new.wait()
            self._new.clear()
            if self._latest is not None:
                await self.recorder.emit("tool.progress", self._latest)
            await asyncio.sleep(PROGRESS_INTERVAL)


def _finite(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def progress_of(payload: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """What a running call's card shows of its latest `tool.progress`: '3/10 — fetching…' and, with a
    total, a progress bar."""
    if not payload or not (label := progress_label(dict(payload))):
        return None
    total = payload.get("total")
    total = total if isinstance(total, int | float) else None
    return {"label": label, "value": payload.get("progress"), "total": total}


def task_progress(payload: ToolTask) -> ToolProgress:
    """A `tool.task` as the progress line of its card: 'Task working: Gathering sources'."""
    status, message = str(payload.get("status") or "").replace("_", " "), payload.get("statusMessage") or ""
    label = f"Task {status}: {message}" if message else f"Task {status}"
    return {
        "id": payload.get("id", ""),
        "name": payload.get("name", ""),
        "progress": 0,
        "total": None,
        "message": label,
    }


def progress_label(payload: dict) -> str:
    """'3/10 — fetching…', or '3 — fetching…' for a progress without a total ('fetching…' alone at 0)."""
    progress, total = payload.get("progress"), payload.get("total")
    if not _finite(progress):
        return ""
    if progress == 0 and not _finite(total) and payload.get("message"):
        return payload["message"]
    count = f"{progress:g}/{total:g}" if _finite(total) else f"{progress:g}"
    message = payload.get("message") or ""
    return f"{count} — {message}" if message else count


class TaskRelay:
    """A call's MCP task (tools/mcp/tasks.py) as `tool.task` events, in order, one per new status:
    `report` (the TaskWatch's callback) runs on the MCP host's loop and hands each state to the run's
    loop. `on_created` runs once, with the first state (the task's id) and the MCP session the task
    was created in (never in events: it is the session's key): the run stores what a resume needs
    (the TurnWrite it returns goes with that first event). Use as `async with TaskRelay(...)` around
    the call."""

    def __init__(
        self,
        recorder: EventRecorder,
        call_id: str,
        name: str,
        *,
        server: str,
        resumable: bool,
        on_created: Callable[[ToolTask, str], Awaitable[TurnWrite]],
    ) -> None:
        self.recorder = recorder
        self.base = {"id": call_id, "name": name, "server": server, "resumable": resumable}
        self.on_created = on_created
        self.task_id = ""  # set once the server answered with a task
        self.session = ""  # the MCP session the task lives in (HTTP servers)
        self._queue: asyncio.Queue[ToolTask] = asyncio.Queue()
        self._loop = asyncio.get_running_loop()
        self._task: asyncio.Task | None = None
        self._open = False

    async def __aenter__(self) -> TaskRelay:
        self._open = True
        return self

    async def __aexit__(self, *exc: object) -> None:
        self._open = False  # a report arriving later is dropped: the result says more
        if self._task is not None:
            if exc[0] is None and not self._task.done():
                # every status the call reported is written before its result (unless writing failed)
                joined = asyncio.ensure_future(self._queue.join())
                await asyncio.wait({joined, self._task}, return_when=asyncio.FIRST_COMPLETED)
                joined.cancel()
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)

    def report(self, state: Any) -> None:  # on the MCP host's loop
        self.session = getattr(state, "session", "") or self.session
        payload: ToolTask = {
            **self.base,  # type: ignore[typeddict-item]
            "taskId": state.task_id,
            "status": state.status,
            "statusMessage": state.message,
        }
        self._loop.call_soon_threadsafe(self._put, payload)

    def _put(self, payload: ToolTask) -> None:  # on the run's loop
        if not self._open:
            return
        self._queue.put_nowait(payload)
        if self._task is None:
            self._task = self._loop.create_task(self._send())

    async def _send(self) -> None:
        while True:
            payload = await self._queue.get()
            try:
                write = None
                if payload["taskId"] != self.task_id:  # the task's first status: what a resume needs, stored with it
                    self.task_id = payload["taskId"]
                    write = await self.on_created(payload, self.session)
                await self.recorder.emit("tool.task", payload, turn_write=write)
            finally:
                self._queue.task_done()
