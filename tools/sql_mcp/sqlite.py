"""The SQLite backend of the SQL MCP server (the standard library's sqlite3).

The file is opened read-only (`mode=ro`) with `PRAGMA query_only`; an authorizer allows only reading
(SELECT, column reads, functions, recursive CTEs, a few schema pragmas), so writes, transaction
control and settings fail when the statement is prepared; the attached-database limit is 0, because
ATTACH and VACUUM INTO create files even on a read-only connection; `sqlite3` runs one statement per
execute; a progress handler interrupts a statement past its deadline.

The progress handler runs between VM steps, never inside one function call: `replace(hex(zeroblob(
100000000)), '0', 'x')` ran for seconds past the deadline and took the process near 1 GB. The length
limit (no string or blob, even in mid-query, longer than the result size limit, at least 1 MiB) bounds
what one call can build, so its memory and, for the linear functions, its time; the handler runs
every PROGRESS_STEPS steps so that a few such calls in a row still stop near the deadline. A call
that is slow without being big (replace() with a long pattern is quadratic) is the server's to end
(server.Calls). The authorizer also refuses fts3_tokenizer(), which hands out a pointer into the
process (an address leak).

No Django here: the server is its own process and must start fast.
"""

from __future__ import annotations

import contextlib
import math
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import unquote

from .base import NO_RESULT, Column, ConfigError, QueryError, Result, Table, size_text, take_rows, unknown_table

COUNT_BUDGET_SECONDS = 1.0  # list_tables counts rows only while that is cheap
# The length limit is the result size limit, but never below this: SQLite reads its own schema (the
# CREATE statements in sqlite_master) under the same limit.
MIN_LENGTH_LIMIT = 1 << 20
# VM steps between deadline checks. Most steps take nanoseconds, but a string function on a value near
# the length limit takes up to ~0.1 s: every 1000 steps let a query run seconds past its deadline.
PROGRESS_STEPS = 100


def sqlite_path(url: str) -> Path:
    """The file of sqlite:///relative/path or sqlite:////absolute/path, which must exist."""
    if not url.startswith("sqlite:///"):
        raise ConfigError("a SQLite URL is sqlite:///relative/path (three slashes) or sqlite:////absolute/path (four)")
    path = Path(unquote(url.removeprefix("sqlite:///")))
    if not path.is_file():
        raise ConfigError(f"SQLite database file not found: {path.resolve()}")
    return path


_SQLITE_READS = frozenset(
    {sqlite3.SQLITE_SELECT, sqlite3.SQLITE_READ, sqlite3.SQLITE_FUNCTION, sqlite3.SQLITE_RECURSIVE}
)
# Functions refused although they only read, and why: fts3_tokenizer(name) returns the address of a
# tokenizer module, a pointer into this process (which helps an exploit of a memory bug).
_SQLITE_DENIED_FUNCTIONS = {"fts3_tokenizer": "it reveals memory addresses, so this server refuses it"}
_SQLITE_SCHEMA_PRAGMAS = frozenset(
    {
        "table_info",
        "table_xinfo",
        "table_list",
        "index_list",
        "index_info",
        "index_xinfo",
        "foreign_key_list",
        "database_list",
        "collation_list",
        "function_list",
        "module_list",
        "pragma_list",
    }
)
_SQLITE_ACTIONS = {
    getattr(sqlite3, f"SQLITE_{name}"): name.replace("_", " ")
    for name in (
        "INSERT",
        "UPDATE",
        "DELETE",
        "CREATE_TABLE",
        "CREATE_TEMP_TABLE",
        "CREATE_INDEX",
        "CREATE_TEMP_INDEX",
        "CREATE_VIEW",
        "CREATE_TEMP_VIEW",
        "CREATE_TRIGGER",
        "CREATE_TEMP_TRIGGER",
        "CREATE_VTABLE",
        "DROP_TABLE",
        "DROP_TEMP_TABLE",
        "DROP_INDEX",
        "DROP_TEMP_INDEX",
        "DROP_VIEW",
        "DROP_TEMP_VIEW",
        "DROP_TRIGGER",
        "DROP_TEMP_TRIGGER",
        "DROP_VTABLE",
        "ALTER_TABLE",
        "REINDEX",
        "ANALYZE",
        "ATTACH",
        "DETACH",
        "PRAGMA",
        "TRANSACTION",
        "SAVEPOINT",
    )
}


def _quote(identifier: str) -> str:
    return '"' + identifier.replace('"', '""') + '"'


class SqliteBackend:
    """A read-only connection to one SQLite file."""

    dialect = "SQLite"
    exact_counts = True

    def __init__(self, path: Path, timeout_ms: int, max_bytes: int):
        self._timeout = timeout_ms / 1000
        self._max_bytes = max_bytes
        self._length_limit = max(max_bytes, MIN_LENGTH_LIMIT)
        self._deadline = math.inf
        self._denied: str | None = None  # why the authorizer refused something during the current call
        try:
            # check_same_thread=False: calls run on worker threads, one at a time (the server's lock).
            conn = sqlite3.connect(
                path.resolve().as_uri() + "?mode=ro", uri=True, isolation_level=None, check_same_thread=False
            )
            conn.execute("PRAGMA query_only = ON")
            conn.execute("SELECT count(*) FROM sqlite_master").fetchone()  # "not a database" now, not later
            # A pragma's table-valued form (pragma_table_info(...)) registers a virtual table on first
            # use, which the authorizer would see as a schema write: register them now.
            for pragma in sorted(_SQLITE_SCHEMA_PRAGMAS):
                conn.execute(f"SELECT * FROM pragma_{pragma} LIMIT 0").fetchall()
        except sqlite3.Error as exc:
            raise ConfigError(f"cannot open SQLite database {path.resolve()}: {exc}") from None
        conn.setlimit(sqlite3.SQLITE_LIMIT_ATTACHED, 0)
        conn.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, self._length_limit)
        conn.set_authorizer(self._authorize)
        conn.set_progress_handler(self._past_deadline, PROGRESS_STEPS)
        self._conn = conn

    def _authorize(self, action: int, arg1: str | None, arg2: str | None, _db: str | None, _trigger: str | None) -> int:
        reason = _SQLITE_DENIED_FUNCTIONS.get((arg2 or "").lower()) if action == sqlite3.SQLITE_FUNCTION else None
        if reason:  # arg2 of SQLITE_FUNCTION is the function's name
            self._denied = reason
            return sqlite3.SQLITE_DENY
        if action in _SQLITE_READS:
            return sqlite3.SQLITE_OK
        if action == sqlite3.SQLITE_PRAGMA and arg1 and arg1.lower() in _SQLITE_SCHEMA_PRAGMAS:
            return sqlite3.SQLITE_OK
        subject = arg2 if action == sqlite3.SQLITE_ALTER_TABLE else arg1  # ALTER's arg1 is the schema
        refused = " ".join(filter(None, (_SQLITE_ACTIONS.get(action, "this statement"), subject)))
        self._denied = f"{refused} is not allowed on this read-only connection"
        return sqlite3.SQLITE_DENY

    def _past_deadline(self) -> bool:
        return time.monotonic() > self._deadline

    @contextlib.contextmanager
    def _call(self, seconds: float | None = None) -> Iterator[sqlite3.Cursor]:
        """A cursor for one call, with the deadline armed; sqlite3 errors become QueryError."""
        self._denied = None
        self._deadline = time.monotonic() + (self._timeout if seconds is None else seconds)
        cursor = self._conn.cursor()
        try:
            yield cursor
        except (sqlite3.Error, sqlite3.Warning) as exc:
            raise QueryError(self._message(exc)) from None
        finally:
            cursor.close()
            self._deadline = math.inf

    def _message(self, exc: Exception) -> str:
        message = str(exc)
        if self._denied:
            return f"{message}: {self._denied}"
        if message == "interrupted":  # only our progress handler interrupts
            return f"interrupted: the statement ran past the time limit ({self._timeout * 1000:.0f} ms)"
        if message == "string or blob too big":  # SQLITE_TOOBIG: the length limit
            return f"{message}: no value, even mid-query, may exceed {size_text(self._length_limit)} here"
        return message

    def _names(self, cursor: sqlite3.Cursor) -> list[tuple[str, str]]:
        cursor.execute(
            "SELECT name, type FROM sqlite_master WHERE type IN ('table', 'view') "
            "AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY name"
        )
        return cursor.fetchall()

    def tables(self) -> list[Table]:
        with self._call(min(self._timeout, COUNT_BUDGET_SECONDS)) as cursor:
            return [
                Table(name, self._count(cursor, name) if kind == "table" else None)
                for name, kind in self._names(cursor)
            ]

    def _count(self, cursor: sqlite3.Cursor, table: str) -> int | None:
        try:
            return cursor.execute(f"SELECT count(*) FROM {_quote(table)}").fetchone()[0]
        except sqlite3.OperationalError:  # interrupted: the budget is spent, the rest stay unknown
            return None

    def columns(self, table: str) -> list[Column]:
        with self._call() as cursor:
            names = [name for name, _ in self._names(cursor)]
            actual = {name.lower(): name for name in names}.get(table.lower())  # names ignore case
            if actual is None:
                raise unknown_table(table, names)
            cursor.execute('SELECT name, type, "notnull", pk FROM pragma_table_info(?)', (actual,))
            return [
                Column(name, type_ or "", nullable=not (notnull or pk), primary_key=bool(pk))
                for name, type_, notnull, pk in cursor.fetchall()
            ]

    def query(self, sql: str, max_rows: int) -> Result:
        with self._call() as cursor:
            cursor.execute(sql)
            if cursor.description is None:
                raise QueryError(NO_RESULT)
            columns = [d[0] for d in cursor.description]
            rows, cut = take_rows(cursor, max_rows, self._max_bytes)
        return Result(columns, rows, cut)

    def explain(self, sql: str) -> str:
        """The plan as an indented tree (rows are id, parent, -, detail)."""
        with self._call() as cursor:
            steps = cursor.execute("EXPLAIN QUERY PLAN " + sql).fetchall()
        depth: dict[int, int] = {}
        lines = []
        for step_id, parent, _, detail in steps:
            depth[step_id] = depth.get(parent, -1) + 1
            lines.append("  " * depth[step_id] + detail)
        return "\n".join(lines) or "(empty plan)"
