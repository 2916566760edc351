"""`manage.py aptix_worker`: a worker process that runs turns from the run queue (agents/run/queue.py).

It starts the process's start-up hooks at once (the MCP host, the orphan sweep), then reads runs
from the queue: each is claimed in the database (agents/run/claims.py) and, if this worker won the
claim, run as a task on this loop, so one worker runs many turns at a time. Every entry is acked
once its claim is decided; entries a dead worker read and never acked are reclaimed after
RECLAIM_IDLE seconds. On SIGTERM/SIGINT it stops reading and gives its runs `grace` seconds to end;
runs still going then are cancelled (they end as stopped), and a run cut off harder (SIGKILL) is
ended or re-queued by the sweep of the other processes once its lease expires.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import time
from collections.abc import Callable

from django.conf import settings

from aptix.ids import new_hex_id

from ..runner import get_runner
from . import queue
from .claims import claims_executor, run_claims
from .spans import claimed_trace

logger = logging.getLogger("aptix.runs")

RECLAIM_IDLE = 30.0  # seconds an entry may sit read-but-unacked before another worker takes it
ALIVE_TTL = 3 * queue.BLOCK_SECONDS  # the worker refreshes its sign of life at least every read


def worker_name() -> str:
    return f"{socket.gethostname()}:{os.getpid()}:{new_hex_id()[:6]}"


class QueueWorker:
    def __init__(self, *, name: str | None = None, grace: float = 30.0) -> None:
        self.name = name or worker_name()
        self.grace = grace
        self.runner = get_runner()

    async def serve(self, stop: asyncio.Event, *, start_up: Callable[[], None] | None = None) -> None:
        """Read and run runs until `stop` is set. `start_up` runs first, on this loop: the serving
        process's hooks (the MCP host, the orphan sweep), which the composition root owns (aptix/asgi.py)."""
        if start_up is not None:
            start_up()
        warm_up()
        client = queue.queue_client()
        try:
            await queue.ensure_group(client)
            logger.info("Worker %s reads runs from %s", self.name, queue.STREAM, extra={"event": "worker.started"})
            loop = asyncio.get_running_loop()
            reclaim_at = loop.time() + RECLAIM_IDLE
            while not stop.is_set():
                await queue.mark_alive(client, self.name, ALIVE_TTL)
                runs = await self._read(client, stop)
                if loop.time() >= reclaim_at:
                    runs += await queue.reclaim(client, self.name, idle=RECLAIM_IDLE)
                    reclaim_at = loop.time() + RECLAIM_IDLE
                if runs:
                    await self.take(client, runs)
        finally:
            await self._drain()
            await client.aclose()

    async def take(self, client, runs: list[queue.QueuedRun]) -> list[bool]:
        """Claim the runs (on the claims' own thread, in one trip); run here those whose claim is ours.
        Acked either way, all at once: the database decides. Returns whether each was claimed."""
        read_at = time.time_ns()
        dispatched = [(run.turn_id, run.dispatch) for run in runs]
        loop = asyncio.get_running_loop()
        claimed = await loop.run_in_executor(claims_executor, run_claims, dispatched, self.name)
        await queue.ack(client, *(run.entry_id for run in runs))
        for run, ours in zip(runs, claimed, strict=True):
            if ours:
                trace = claimed_trace(run.trace, read_at)
                self.runner.run_here(run.turn_id, worker=self.name, trace=trace, **run.arguments)
            else:
                logger.info(
                    "Run of turn %s already claimed or ended: delivery ignored",
                    run.turn_id,
                    extra={"event": "worker.duplicate", "turn_id": run.turn_id},
                )
        return claimed

    async def _read(self, client, stop: asyncio.Event) -> list[queue.QueuedRun]:
        reading = asyncio.ensure_future(queue.read(client, self.name))
        stopping = asyncio.ensure_future(stop.wait())
        done, _ = await asyncio.wait({reading, stopping}, return_when=asyncio.FIRST_COMPLETED)
        stopping.cancel()
        if reading in done:
            return reading.result()
        reading.cancel()  # entries a cancelled read was handed stay pending: reclaimed later
        return []

    async def _drain(self) -> None:
        tasks = list(self.runner.tasks.values())
        if not tasks:
            return
        logger.info("Worker %s waits %s s for %d run(s)", self.name, self.grace, len(tasks))
        _, pending = await asyncio.wait(tasks, timeout=self.grace)
        for task in pending:
            task.cancel()
        if pending:
            await asyncio.wait(pending, timeout=10)


def warm_up() -> None:
    """Set up before the first run what it would set up while the others wait: the reasoner's modules
    and internal tools, the default model's client and its tokenizer. A cold worker spent about a
    second on them, holding its event loop, in the first of 100 runs started at once (scale-out
    bench, py-spy)."""
    from .context import TokenCounter
    from .reasoner import Reasoner

    try:
        TokenCounter(Reasoner().llm.model)
    except Exception:
        logger.warning("Warming up the worker failed; its first run sets up instead", exc_info=True)


_serving = False  # this process is a worker (serve_forever): its start-up hooks ask (automations' clock)


def serving() -> bool:
    """Whether this process serves the run queue as a worker (its turns run here)."""
    return _serving


def serve_forever(
    grace: float | None = None, *, start_up: Callable[[], None] | None = None, health_port: int | None = None
) -> None:
    """Run a worker until SIGTERM/SIGINT (the management command, which passes the start-up hooks).
    `health_port`: serve `/healthz` and `/readyz` there (agents/run/health.py WorkerProbe)."""
    import signal

    global _serving  # noqa: PLW0603 - one worker per process
    _serving = True

    from .health import LoopWatch, WorkerProbe

    async def main() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        probe = None
        if health_port is not None:
            watch = LoopWatch()
            watch.start()
            probe = WorkerProbe(watch, health_port, host=settings.APTIX_WORKER_HEALTH_HOST)
            probe.start()
        worker = QueueWorker(grace=grace if grace is not None else settings.APTIX_WORKER_GRACE)
        try:
            await worker.serve(stop, start_up=start_up)
        finally:
            if probe is not None:
                probe.stop()

    asyncio.run(main())
