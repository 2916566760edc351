"""A running tool call's progress (MCP `notifications/progress`) as `tool.progress` events, coalesced:
the first report goes at once, then at most one event per PROGRESS_INTERVAL, always the newest
report, so a server that reports a thousand times a second costs the stream two events a second."""

from __future__ import annotations

import asyncio
import math

from ..events import EventRecorder
from ..events.payloads import ToolProgress

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
