"""Which runner this process uses: chosen once from settings (`REDIS_URL` → workers), replaceable
by tests (`use_runner`). An explicit registry of dotted paths, imported on first use, so the turn
services can ask the runner without importing the run loop."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from django.conf import settings
from django.utils.module_loading import import_string

if TYPE_CHECKING:
    from .runners import Runner

RUNNERS = {
    "local": "agents.run.runners.LocalRunner",
    "worker": "agents.run.runners.WorkerRunner",
}

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
