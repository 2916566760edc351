"""The heartbeats and cancel checks of the runs a process holds, for all of them at once.

Each run used to keep its own: an UPDATE per heartbeat and, where a Stop may be asked for in another
process, a query every half second for its cancel flag. With 50 runs on a worker that was about 125
queries a second, a quarter of the worker's time in the scale-out bench's profile (py-spy), all of it
queued with the runs' own database work. Now one task per process ticks for every run it holds: one
UPDATE renews all the leases of a heartbeat, one SELECT finds the runs a Stop asked to cancel.

A renewal that fails for a run (the turn was ended elsewhere, or its lease expired and another worker
took it) stops that run, unless the run wrote its turn's end itself or a Stop already reached it
(`ended()`): it is then only writing or broadcasting its last events, which a cancel would lose.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
from collections.abc import Callable
from dataclasses import dataclass

from django.conf import settings
from django.db import connections, transaction
from django.utils import timezone

from ..models import Turn
from .claims import lease, renewals_executor

logger = logging.getLogger("aptix.runs")
CANCEL_POLL_INTERVAL = 0.5  # seconds between looks at the cancel flags of the runs held here


@dataclass
class Held:
    task: asyncio.Task | None  # the run's (None only outside a task)
    worker: str  # the name its claim is held under; "" for a run of this process's own (no claim)
    ended: Callable[[], bool]  # the run wrote its end, or is writing it: it needs no cancel


class Leases:
    """The runs a process holds, kept alive by one task (started with the first, ended with the last)."""

    def __init__(self, *, polls_cancel: bool) -> None:
        self.polls_cancel = polls_cancel
        self._held: dict[str, Held] = {}
        self._ticker: asyncio.Task | None = None

    def hold(
        self, turn_id: str, task: asyncio.Task | None, worker: str = "", ended: Callable[[], bool] = lambda: False
    ) -> None:
        self._held[turn_id] = Held(task, worker, ended)
        if self._ticker is None or self._ticker.done():
            self._ticker = asyncio.get_running_loop().create_task(
                self._tick_forever(), name="run-leases", context=contextvars.Context()
            )

    def release(self, turn_id: str) -> None:
        self._held.pop(turn_id, None)

    async def _tick_forever(self) -> None:
        loop = asyncio.get_running_loop()
        beat_at = loop.time() + settings.APTIX_RUN_HEARTBEAT
        while self._held:
            wait = max(0.0, beat_at - loop.time())
            await asyncio.sleep(min(wait, CANCEL_POLL_INTERVAL) if self.polls_cancel else wait)
            try:
                if loop.time() >= beat_at:
                    beat_at = loop.time() + settings.APTIX_RUN_HEARTBEAT
                    await self.beat()
                if self.polls_cancel:
                    await self.poll_cancels()
            except Exception:  # a database hiccup must not end the heartbeats of every run
                logger.exception("Renewing the runs' leases failed; tried again at the next tick")

    async def beat(self) -> None:
        """Renew every held run's claim (or heartbeat); stop the runs that no longer hold their turn."""
        held = dict(self._held)
        lost = await asyncio.get_running_loop().run_in_executor(
            renewals_executor, _renew_all, {turn_id: h.worker for turn_id, h in held.items()}
        )
        for turn_id in lost:
            run = held[turn_id]
            self.release(turn_id)
            if run.ended():
                continue
            logger.warning("Run of turn %s lost its claim: stopped", turn_id, extra={"turn_id": turn_id})
            if run.task is not None:
                run.task.cancel()

    async def poll_cancels(self) -> None:
        """Cancel the held runs whose turn a Stop (in any process) asked to cancel."""
        ids = list(self._held)
        if not ids:
            return
        asked = await asyncio.get_running_loop().run_in_executor(renewals_executor, _cancels_asked, ids)
        for turn_id in asked:
            run = self._held.pop(turn_id, None)
            if run is not None and run.task is not None and not run.ended():
                run.task.cancel()  # (a run that wrote its turn's end is left to broadcast it, as in beat)


def _renew_all(workers: dict[str, str]) -> set[str]:
    """One UPDATE per worker name (a process has one) and one for unclaimed runs; the turns whose run
    no longer holds them."""
    now = timezone.now()
    lost: set[str] = set()
    try:
        for worker in set(workers.values()):
            ids = [turn_id for turn_id, w in workers.items() if w == worker]
            mine = Turn.objects.filter(pk__in=ids, finished_at__isnull=True)
            if worker:
                mine = mine.filter(worker=worker)
            with transaction.atomic():  # the rows locked in turn id order first, as the event writer does
                list(mine.order_by("pk").select_for_update().values_list("pk", flat=True))
                if not worker:
                    mine.update(heartbeat_at=now)
                    continue
                renewed = mine.update(heartbeat_at=now, lease_until=now + lease())
            if renewed < len(ids):
                lost |= set(ids) - set(mine.values_list("pk", flat=True))
    except Exception:
        connections.close_all()  # a broken connection must not fail every later renewal
        raise
    return lost


def _cancels_asked(ids: list[str]) -> list[str]:
    try:
        return list(
            Turn.objects.filter(pk__in=ids, cancel_requested=True, finished_at__isnull=True).values_list(
                "pk", flat=True
            )
        )
    except Exception:
        connections.close_all()
        raise
