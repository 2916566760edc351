"""The runner port: what the turn services need from whatever executes runs, and which runner this
process uses — chosen once from settings (`REDIS_URL` → workers), replaceable by tests (`use_runner`).

The implementations live in agents/run/runners.py, above the turn services; they are named here by
dotted path and imported on first use, so the services (agents/turns.py, agents/submit.py) ask the
runner without importing the run loop: imports flow one way (see [tool.importlinter] in
pyproject.toml)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from datetime import datetime
from typing import Any, ClassVar, Protocol

from django.conf import settings
from django.db.models import QuerySet
from django.utils.module_loading import import_string

from .models import Turn

RUNNERS = {
    "local": "agents.run.runners.LocalRunner",
    "worker": "agents.run.runners.WorkerRunner",
}


class Runner(Protocol):
    """Starts, stops and awaits runs (agents/run/runners.py implements it)."""

    kind: ClassVar[str]

    @property
    def tasks(self) -> Mapping[str, asyncio.Task]: ...

    def start(
        self, turn_id: str, *, client_tools: list[dict] | None = None, tool_results: list[dict] | None = None
    ) -> asyncio.Task:
        """Dispatch the turn's run; must be called on the serving event loop."""
        ...

    async def wait(self, turn_id: str, started: asyncio.Task | None = None, *, session_id: str = "") -> Turn: ...

    def stop(self, turn_id: str) -> bool: ...

    def orphan_reason(self, turn: Turn, now: datetime) -> str | None: ...

    def orphan_candidates(self, turns: QuerySet[Turn], now: datetime) -> QuerySet[Turn]: ...

    def unheld(self, turn: Turn, now: datetime) -> bool: ...

    def run_here(self, turn_id: str, *, worker: str = "", **arguments: Any) -> asyncio.Task: ...

    def start_sweeping(self, interval: float | None = None) -> None: ...

    async def sweep(self) -> None: ...


_runner: Runner | None = None


def runner_kind() -> str:
    return "worker" if settings.REDIS_URL else "local"


def get_runner() -> Runner:
    """This process's runner (created on first use)."""
    global _runner  # noqa: PLW0603 - one per process, built on first use
    if _runner is None:
        _runner = import_string(RUNNERS[runner_kind()])()
    return _runner


@contextmanager
def use_runner(runner: Runner) -> Iterator[Runner]:
    """Run with `runner` instead (tests inject the one they exercise)."""
    global _runner  # noqa: PLW0603 - one per process, built on first use
    previous, _runner = _runner, runner
    try:
        yield runner
    finally:
        _runner = previous
