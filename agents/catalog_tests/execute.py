"""Running a catalog test run in the background (runs.py keeps its record).

`test_run_launch(run_id)` starts the run as a task on this process's event loop (the web process that
took the request, or the `catalog_test` command's); each of its cases is a real turn on the
deployment's runner (agents/runner.py: a task here, or a worker's with Redis), at most
`APTIX_CATALOG_TEST_CONCURRENCY` at once. Progress is written as each case ends; a heartbeat every
few seconds says the run is alive (runs.py ends a run whose heartbeat stopped). A stop request (a flag
in the database, so any process may set it) is seen within half a second: no new case starts, the
cases under way have their turns cancelled and their sessions deleted, and what finished is kept.

A run yields to people: while any person's turn is queued or running, it runs one case at a time,
so a user's turn never waits behind four of the catalog's."""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
import time
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

from asgiref.sync import SyncToAsync, sync_to_async
from django.conf import settings
from django.utils import timezone

from ..models import CatalogTestRun
from ..runner import get_runner
from ..turns import turn_cancel
from .cases import RoutingCase, case_run, routing_cases
from .checks import CheckCase, check_case_run, check_cases
from .compare import cases_changed, checks_changed
from .routing import concurrency, routing_case_run
from .runs import HEARTBEAT, run_sessions_delete, run_turns_open, test_run_expire, user_turns_live
from .summary import routing_summary

logger = logging.getLogger("aptix.catalog_tests")
WATCH_EVERY = 0.5  # seconds between looks at the stop flag (and, while a case waits, at people's turns)
PEOPLE_FRESH = 0.1  # seconds a look at people's turns holds for the cases about to start
ERROR_CRASHED = "The run failed: {error}"

_tasks: set[asyncio.Task] = set()  # the runs this process drives (a reference keeps each task alive)


@dataclass(frozen=True)
class Item:
    """One thing the run does: a case (routing) or a check, over one catalog."""

    index: int
    catalog: str  # "published" or "drafts"
    kind: str  # "routing" or "checks"
    case: Any


def test_run_launch(run_id: str) -> asyncio.Task:
    """Drive the run on this loop, in a context of its own (not the request's)."""
    task = asyncio.get_running_loop().create_task(
        test_run_execute(run_id), name=f"catalog-test-{run_id}", context=contextvars.Context()
    )
    _tasks.add(task)
    task.add_done_callback(_tasks.discard)
    return task


def test_run_launch_soon(run_id: str) -> bool:
    """From sync code (an admin view): launch the run on the event loop this thread serves, when it
    serves one (a sync view under ASGI); else it stays queued and this process's taker starts it."""
    loop = getattr(SyncToAsync.threadlocal, "main_event_loop", None)
    if loop is None or not loop.is_running():
        return False
    loop.call_soon_threadsafe(test_run_launch, run_id)
    return True


@sync_to_async
def _queued() -> list[str]:
    """The queued runs; on the way, a running run whose process is gone is ended (runs.py)."""
    for run in CatalogTestRun.objects.filter(status=CatalogTestRun.Status.RUNNING):
        test_run_expire(run)
    return list(CatalogTestRun.objects.filter(status=CatalogTestRun.Status.QUEUED).values_list("pk", flat=True))


async def test_runs_take() -> int:
    """Start the queued runs (one a sync view left, or one whose process stopped before it began): the
    first process to claim a run drives it (`_begin` claims it in the database)."""
    queued = await _queued()
    for run_id in queued:
        test_run_launch(run_id)
    return len(queued)


_taker: asyncio.Task | None = None


def start_catalog_tests() -> None:
    """Start-up hook of a serving process (aptix/asgi.py): take queued catalog test runs now and on the
    runs' sweep timer. Must be called on the serving event loop."""
    global _taker  # noqa: PLW0603 - one per process
    if settings.APTIX_RUN_SWEEP and (_taker is None or _taker.done()):
        _taker = asyncio.get_running_loop().create_task(
            _take_forever(settings.APTIX_RUN_HEARTBEAT), name="catalog-test-taker", context=contextvars.Context()
        )


async def _take_forever(interval: float) -> None:
    while True:
        try:
            await test_runs_take()
        except Exception:  # a database hiccup must not end the taking
            logger.exception("Taking queued catalog test runs failed; trying again in %s s", interval)
        await asyncio.sleep(interval)


def catalogs_of(run: CatalogTestRun) -> list[str]:
    if run.catalog == CatalogTestRun.Catalog.COMPARE:
        return ["published", "drafts"]
    return [run.catalog]


def kinds_of(run: CatalogTestRun) -> list[str]:
    return ["routing", "checks"] if run.kind == CatalogTestRun.Kind.BOTH else [run.kind]


def plan(run: CatalogTestRun) -> list[Item]:
    """Every case and check the run does, in order: per catalog, routing cases then checks."""
    items: list[Item] = []
    for catalog in catalogs_of(run):
        drafts = catalog == "drafts"
        for kind in kinds_of(run):
            cases: list[Any] = (
                routing_cases(team=run.team, drafts=drafts)
                if kind == "routing"
                else check_cases(team=run.team, drafts=drafts)
            )
            items += [Item(len(items) + n, catalog, kind, case) for n, case in enumerate(cases)]
    return items


@sync_to_async
def _begin(run_id: str) -> tuple[CatalogTestRun, list[Item]] | None:
    run = CatalogTestRun.objects.select_related("team", "started_by").get(pk=run_id)
    if run.status != CatalogTestRun.Status.QUEUED:  # stopped before it began, or taken already
        return None
    items = plan(run)
    now = timezone.now()
    started = CatalogTestRun.objects.filter(pk=run_id, status=CatalogTestRun.Status.QUEUED).update(
        status=CatalogTestRun.Status.RUNNING, started_at=now, heartbeat_at=now, total=len(items)
    )
    return (run, items) if started else None


class Progress:
    """What the run found so far, written to its row as each item ends."""

    def __init__(self, run: CatalogTestRun, items: list[Item]) -> None:
        self.run, self.items = run, items
        self.found: dict[int, dict[str, Any]] = {}
        self.tokens = 0
        self.lock = asyncio.Lock()

    async def add(self, item: Item, result: Any) -> None:
        async with self.lock:
            self.found[item.index] = result.as_dict()
            self.tokens += int(getattr(result, "tokens", 0) or 0)
            await sync_to_async(self._save)()

    def results(self) -> dict[str, Any]:
        """{catalog: {"routing": {cases, modes, accuracy, matrix}, "checks": [...]}} of what finished."""
        results: dict[str, Any] = {}
        for item in self.items:
            found = self.found.get(item.index)
            if found is None:
                continue
            part = results.setdefault(item.catalog, {})
            if item.kind == "routing":
                part.setdefault("routing", {}).setdefault("cases", []).append(found)
            else:
                part.setdefault("checks", []).append(found)
        for part in results.values():
            routing = part.get("routing")
            if routing:
                modes, accuracy, matrix = routing_summary(SimpleNamespace(**case) for case in routing["cases"])
                routing.update(modes=modes, accuracy=accuracy, matrix=matrix)
        if self.run.catalog == CatalogTestRun.Catalog.COMPARE:
            results["changed"] = changed(results.get("published", {}), results.get("drafts", {}))
        return results

    def _save(self, **fields: Any) -> None:
        results = self.results()
        main = results.get("published" if self.run.catalog == CatalogTestRun.Catalog.PUBLISHED else "drafts", {})
        CatalogTestRun.objects.filter(pk=self.run.pk).update(
            done=len(self.found),
            results=results,
            tokens=self.tokens,
            accuracy=(main.get("routing") or {}).get("accuracy"),
            checks_failed=sum(1 for check in main.get("checks", []) if not check.get("ok")),
            heartbeat_at=timezone.now(),
            **fields,
        )


def changed(published: dict[str, Any], drafts: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """What the drafts change (compare.py): every case whose result differs, every check that passed
    on the published catalog and fails with the drafts."""
    before = [SimpleNamespace(**case) for case in (published.get("routing") or {}).get("cases", [])]
    after = [SimpleNamespace(**case) for case in (drafts.get("routing") or {}).get("cases", [])]
    checks_before = [SimpleNamespace(**check) for check in published.get("checks", [])]
    checks_after = {(c["mode"], c["prompt"]): c for c in drafts.get("checks", [])}
    return {
        "cases": [change.as_dict() for change in cases_changed(before, after)],  # type: ignore[arg-type]
        "checks": [
            checks_after[(check.mode, check.prompt)]
            for check in checks_changed(checks_before, [SimpleNamespace(**c) for c in checks_after.values()])
        ],
    }


async def _run_item(run: CatalogTestRun, item: Item) -> Any:
    drafts = item.catalog == "drafts"
    if item.kind == "routing":
        case: RoutingCase = item.case
        return await routing_case_run(case=case, user=run.started_by, team=run.team, model=run.model, drafts=drafts)
    check: CheckCase = item.case
    return await check_case_run(case=check, user=run.started_by, team=run.team, model=run.model, drafts=drafts)


@sync_to_async
def _stop_requested(run_id: str) -> bool:
    return CatalogTestRun.objects.filter(pk=run_id, stop_requested=True).exists()


@sync_to_async
def _beat(run_id: str) -> None:
    CatalogTestRun.objects.filter(pk=run_id).update(heartbeat_at=timezone.now())


async def test_run_execute(run_id: str) -> None:
    """The whole run: plan, run every item (bounded, yielding to people), then the summary; a stop
    ends it as stopped, an error as failed (named in the run's `error`)."""
    begun = await _begin(run_id)
    if begun is None:
        return
    run, items = begun
    case_run.set(run.pk)  # this task's case sessions are the run's (cases.py)
    progress = Progress(run, items)
    try:
        status = await _drive(run, items, progress)
    except Exception as exc:  # whatever broke, the run ends failed and says why
        logger.exception("Catalog test run %s failed", run_id, extra={"event": "catalog_tests.failed"})
        await _cut_short(run_id)
        await sync_to_async(progress._save)(
            status=CatalogTestRun.Status.FAILED, error=ERROR_CRASHED.format(error=exc), finished_at=timezone.now()
        )
        return
    await sync_to_async(progress._save)(status=status, finished_at=timezone.now())


class People:
    """Whether a person's turn is live, looked up as a case is about to start (at most every
    PEOPLE_FRESH seconds however many cases wait), so a turn that starts is seen at once."""

    def __init__(self) -> None:
        self.looked, self.seen = -PEOPLE_FRESH, False

    async def live(self) -> bool:
        now = time.monotonic()
        if now - self.looked >= PEOPLE_FRESH:
            self.looked, self.seen = now, await sync_to_async(user_turns_live)()
        return self.seen


async def _drive(run: CatalogTestRun, items: list[Item], progress: Progress) -> str:
    limit = concurrency()
    in_flight = 0
    people = People()
    stopping = asyncio.Event()
    slot = asyncio.Condition()

    async def one(item: Item) -> None:
        nonlocal in_flight
        async with slot:
            # At most `limit` at once; one at a time while people's turns are live (they go first).
            while not stopping.is_set() and (in_flight >= limit or (in_flight and await people.live())):
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(slot.wait(), WATCH_EVERY)
            if stopping.is_set():
                return
            in_flight += 1
        try:
            result = await _run_item(run, item)
            await progress.add(item, result)
        finally:
            async with slot:
                in_flight -= 1
                slot.notify_all()

    async def watch() -> None:
        since_beat = 0.0
        while not await _stop_requested(run.pk):
            await asyncio.sleep(WATCH_EVERY)
            since_beat += WATCH_EVERY
            if since_beat >= HEARTBEAT.total_seconds():
                since_beat = 0.0
                await _beat(run.pk)
        stopping.set()

    watcher = asyncio.create_task(watch())
    work = [asyncio.create_task(one(item)) for item in items]
    try:
        everything: asyncio.Future[Any] = asyncio.gather(*work)
        stopped: asyncio.Future[Any] = asyncio.create_task(stopping.wait())
        await asyncio.wait({everything, stopped}, return_when=asyncio.FIRST_COMPLETED)
        if stopping.is_set():
            for task in work:
                task.cancel()
            await asyncio.gather(*work, return_exceptions=True)
            await _cut_short(run.pk)
            return CatalogTestRun.Status.STOPPED
        stopped.cancel()
        await everything  # an item's exception fails the run
        return CatalogTestRun.Status.DONE
    finally:
        watcher.cancel()
        for task in work:
            task.cancel()


async def _cut_short(run_id: str) -> None:
    """Cancel the run's cases still under way, wait for their turns to end, delete their sessions."""
    runner = get_runner()
    for turn in await sync_to_async(run_turns_open)(run_id=run_id):
        await turn_cancel(turn=turn)
        if not turn.is_finished:
            await runner.wait(turn.pk, session_id=turn.session_id)
    await sync_to_async(run_sessions_delete)(run_id=run_id)


async def test_runs_wait() -> None:
    """Until every run this process drives has ended (the `catalog_test` command's exit, a shutdown)."""
    while _tasks:
        await asyncio.gather(*list(_tasks), return_exceptions=True)
