"""Writing a batch of a turn's events, and the turn row's columns given with them, in one
transaction (one statement on PostgreSQL), on a thread of its own — or, with `db_threads_inline()`
(tests), on asgiref's sync thread, the caller's database connection."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, cast

from asgiref.sync import sync_to_async
from django.db import connections, transaction
from django.db.models import Field, Q
from django.db.models.sql import UpdateQuery

from ..models import Turn, TurnEvent

logger = logging.getLogger("aptix.events")


@dataclass
class TurnWrite:
    """Columns of a turn's row to write with a batch of events, and — when they change its status —
    the statuses the row may hold for them to apply (agents/turns.py builds these: it owns the
    transition table). A status change the row no longer allows is not applied; the events are."""

    fields: dict[str, Any] = field(default_factory=dict)
    from_statuses: frozenset[str] | None = None

    def __post_init__(self) -> None:
        # A status written without the statuses it may replace would skip the transition table.
        if "status" in self.fields and self.from_statuses is None:
            raise ValueError(
                f"A TurnWrite of status {self.fields['status']!r} needs from_statuses: build it with "
                "agents.turns.transition, which checks the transition table."
            )

    def merge(self, later: TurnWrite) -> None:
        """Fold a later write into this one (one batch). The guard stays the earliest status
        change's: that is what the row holds when the batch is written."""
        if self.from_statuses is None:
            self.from_statuses = later.from_statuses
        self.fields.update(later.fields)


# Event writes run on a thread of their own, not on asgiref's shared sync thread, which every async
# view's ORM call and every tool's database read in this process queue on: a turn's writes hold up
# neither other requests nor its own tool calls. One thread (so one database connection, kept open
# like the sync thread's) serves all turns of the process; each turn's writer has one batch in flight.
_executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="aptix-events")


@dataclass
class _Job:
    """One turn's batch waiting for the events thread, and the future its writer awaits."""

    turn_id: str
    events: list[TurnEvent]
    write: TurnWrite | None
    loop: asyncio.AbstractEventLoop
    future: asyncio.Future


# Group commit across turns: the batches handed over while the thread writes wait here and go in
# its next transaction together. Twenty turns starting at once used to queue twenty transactions
# (one commit each) on the thread, and a turn's first token waited behind all of them (measured:
# +69 ms of first-token latency at 20 streams); now it waits for at most one.
class _Pending:
    def __init__(self) -> None:
        self.jobs: list[_Job] = []
        self.lock = threading.Lock()
        self.scheduled = False  # a _write_pending call is queued on the thread, not yet started


_pending = _Pending()
_inline = False


@contextmanager
def db_threads_inline() -> Iterator[None]:
    """Write events (here) and render live fragments (agents/web/renders.py) on asgiref's sync thread
    (`sync_to_async`, thread-sensitive) instead of their own threads and connections: the switch the
    tests turn on (tests/conftest.py, `inline_db`), whose test transaction is that thread's
    connection's, so their turns need no committed rows. Off, the default, is production's path."""
    global _inline  # noqa: PLW0603 - one switch per process, like agents.runner.use_runner
    previous, _inline = _inline, True
    try:
        yield
    finally:
        _inline = previous


def db_threads_are_inline() -> bool:
    return _inline


def submit_events(turn_id: str, events: list[TurnEvent], write: TurnWrite | None) -> asyncio.Future:
    """Hand a batch to the events thread; the future is done once it is written (or failed). The
    thread writes batches in the order they were handed over, so a turn may hand over its next batch
    while one is in flight (its reply's first delta does: agents/events/recorder.py)."""
    if _inline:  # tasks start in the order they are made, and the sync thread runs them in that order
        return asyncio.ensure_future(sync_to_async(_write_inline)(turn_id, events, write))
    loop = asyncio.get_running_loop()
    job = _Job(turn_id, events, write, loop, loop.create_future())
    with _pending.lock:
        _pending.jobs.append(job)
        submit, _pending.scheduled = not _pending.scheduled, True
    if submit:
        _executor.submit(_write_pending)
    return job.future


def close_writer_connection() -> None:
    """Close the event thread's database connection (test teardown; it reopens when needed)."""
    _executor.submit(connections.close_all).result(timeout=10)


def _write_pending() -> None:
    with _pending.lock:
        jobs, _pending.jobs, _pending.scheduled = _pending.jobs, [], False
    for job, error in zip(jobs, _write_jobs(jobs), strict=True):
        _settle(job, error)


def _write_jobs(jobs: list[_Job]) -> list[BaseException | None]:
    """Every job in one transaction; if that fails, each on its own, so one turn's bad batch (a
    duplicate seq) fails that turn only. The error of each job, or None."""
    if len(jobs) > 1:
        try:
            _write_group(jobs)
            return [None] * len(jobs)
        except Exception:
            logger.warning("A group of %d event batches failed: writing them one by one", len(jobs), exc_info=True)
    errors: list[BaseException | None] = []
    for job in jobs:
        try:
            _write_sync(job.turn_id, job.events, job.write)
            errors.append(None)
        except Exception as exc:  # noqa: BLE001 - handed to that turn's writer, which logs it
            errors.append(exc)
    return errors


def _settle(job: _Job, error: BaseException | None) -> None:
    def settle() -> None:
        if job.future.done():  # its writer was cancelled (the loop is shutting down)
            return
        if error is None:
            job.future.set_result(None)
        else:
            job.future.set_exception(error)

    with contextlib.suppress(RuntimeError):  # the loop is closed: nobody waits for this batch any more
        job.loop.call_soon_threadsafe(settle)


def _write_sync(turn_id: str, events: list[TurnEvent], write: TurnWrite | None) -> None:
    try:
        _write_batch(turn_id, events, write)
    except Exception:
        # A broken connection (the server restarted) must not fail every later batch: drop it, the
        # next batch connects afresh.
        connections.close_all()
        raise


def _write_inline(turn_id: str, events: list[TurnEvent], write: TurnWrite | None) -> None:
    # The connection is the caller's (its transaction may be a test's): a failed batch rolls back to
    # its savepoint, and the connection is neither closed nor left in an aborted transaction.
    with transaction.atomic(using=TurnEvent.objects.db):
        _write_batch(turn_id, events, write)


_INSERT_COLUMNS = ("turn_id", "seq", "type", "payload", "created_at")
_ROWS_PER_STATEMENT = 200  # 5 parameters a row: far below every backend's parameter limit


def _write_batch(turn_id: str, events: list[TurnEvent], write: TurnWrite | None) -> None:
    """The turn's columns and the events, atomically, in as few round trips as the backend allows:
    on PostgreSQL one statement (`WITH turn AS (UPDATE …) INSERT … VALUES (…), (…)`, atomic by
    itself), elsewhere one transaction of an UPDATE and a multi-row INSERT.

    A fast run's writes compete with it for the GIL at every round trip, hence one statement. And
    not `bulk_create`: on PostgreSQL it sends the rows as typed arrays (`UNNEST`), which psycopg
    builds by escaping each JSON payload character by character, costing more CPU than the rest of
    the run's bookkeeping together. Values still go through each field's own database preparation
    (JSON adaptation, time zones), and the UPDATE is compiled by the ORM."""
    connection = connections[TurnEvent.objects.db]
    statements = _insert_statements(connection, events)
    update = _update_statement(connection, turn_id, write) if write and write.fields else None
    if connection.vendor == "postgresql" and update is not None and len(statements) == 1:
        (sql, params), (update_sql, update_params) = statements[0], update
        with connection.cursor() as cursor:
            cursor.execute(f"WITH turn_update AS ({update_sql}) {sql}", (*update_params, *params))
        return
    with transaction.atomic(using=connection.alias), connection.cursor() as cursor:
        for sql, params in [*([update] if update else []), *statements]:
            cursor.execute(sql, params)


def _write_group(jobs: list[_Job]) -> None:
    """Several turns' batches in one transaction: each turn's columns, then every event of them all
    in one multi-row INSERT. As few statements as possible, because the events thread gives up the
    GIL at each one and, while twenty turns start on the event loop, waits up to a switch interval
    (5 ms) to get it back: a statement per batch (and a savepoint around each) made a group of
    twenty turns' starts take 30-40 ms, and each turn's first token waited for it."""
    connection = connections[TurnEvent.objects.db]
    # Rows locked in turn id order (a stable sort keeps each turn's own writes in order), as the lease
    # renewal locks them (run/leases.py): in any two orders the two deadlocked under 100 runs.
    ordered = sorted(jobs, key=lambda job: job.turn_id)
    updates = [
        _update_statement(connection, job.turn_id, job.write) for job in ordered if job.write and job.write.fields
    ]
    inserts = _insert_statements(connection, [event for job in jobs for event in job.events])
    with transaction.atomic(using=connection.alias), connection.cursor() as cursor:
        for sql, params in [*updates, *inserts]:
            cursor.execute(sql, params)


def _insert_statements(connection: Any, events: list[TurnEvent]) -> list[tuple[str, Sequence[Any]]]:
    fields = [cast(Field, TurnEvent._meta.get_field(name)) for name in _INSERT_COLUMNS]  # concrete columns
    quote = connection.ops.quote_name
    head = (
        f"INSERT INTO {quote(TurnEvent._meta.db_table)} ({', '.join(quote(field.column) for field in fields)}) VALUES "
    )
    row = "(" + ", ".join(["%s"] * len(fields)) + ")"
    statements: list[tuple[str, Sequence[Any]]] = []
    for start in range(0, len(events), _ROWS_PER_STATEMENT):
        chunk = events[start : start + _ROWS_PER_STATEMENT]
        params = [
            field.get_db_prep_save(getattr(event, field.attname), connection) for event in chunk for field in fields
        ]
        statements.append((head + ", ".join([row] * len(chunk)), params))
    return statements


def _update_statement(connection: Any, turn_id: str, write: TurnWrite) -> tuple[str, Sequence[Any]]:
    query = UpdateQuery(Turn)
    query.add_q(Q(pk=turn_id))
    if write.from_statuses is not None:  # the transition guard: an ended turn never flips back
        query.add_q(Q(status__in=sorted(write.from_statuses)))
    query.add_update_values(write.fields)
    return query.get_compiler(connection=connection).as_sql()
