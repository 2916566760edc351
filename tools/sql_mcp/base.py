"""What every backend of the SQL MCP server shares: the Backend protocol, its result types and errors.

A backend holds one connection and runs one statement per call under a deadline, fetching rows one
at a time until the row cap or the size limit (`max_bytes`, every value counted as text) is reached
(`take_rows`). Read-only is a property of the connection, never of the SQL text,
which is not inspected. The backends (sqlite.py, postgres.py) import this module and nothing else
of this package; backends.py picks one for a URL.

No Django here: the server is its own process and must start fast.
"""

from __future__ import annotations

import resource
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Literal, Protocol

NO_RESULT = (
    "the statement returned no result set: only queries (SELECT, WITH, VALUES, TABLE, SHOW, EXPLAIN) can run here"
)


class ConfigError(Exception):
    """The database URL, file or settings are unusable; reported at start-up."""


class QueryError(Exception):
    """A refused or failed call; the message is the database's own."""


@dataclass(frozen=True)
class Table:
    name: str
    rows: int | None  # None when not known (a view, a big table, no statistics)


@dataclass(frozen=True)
class Column:
    name: str
    type: str
    nullable: bool
    primary_key: bool


@dataclass(frozen=True)
class Result:
    columns: list[str]
    rows: list[tuple]
    # Why the statement's later rows were never fetched: the row cap or the size limit; None: all here.
    cut: Literal["rows", "bytes"] | None = None


class Backend(Protocol):
    dialect: str  # "SQLite" or "PostgreSQL", for the tool descriptions
    exact_counts: bool  # whether Table.rows are exact or planner estimates

    def tables(self) -> list[Table]: ...

    def columns(self, table: str) -> list[Column]: ...

    def query(self, sql: str, max_rows: int) -> Result: ...

    def explain(self, sql: str) -> str: ...


def size_text(n: int) -> str:
    """A byte count as people write it: "16 MiB", "64 KiB", "1000 bytes"."""
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size and n % size == 0:
            return f"{n // size} {unit}"
    return f"{n} bytes"


def out_of_memory() -> str:
    """The error for a call that hit the process's address-space limit (server.limit_memory)."""
    limit = resource.getrlimit(resource.RLIMIT_AS)[0]
    shown = "" if limit == resource.RLIM_INFINITY else f" ({size_text(limit)})"
    return f"out of memory: the statement needed more memory than the SQL server may use{shown}; fetch less"


def value_size(value: Any) -> int:
    """What a value weighs in a result: its bytes as UTF-8 text (a blob: its bytes), NULL as "NULL"."""
    if value is None:
        return 4
    if isinstance(value, str):
        return len(value) if value.isascii() else len(value.encode(errors="replace"))
    if isinstance(value, (bytes, bytearray)):
        return len(value)
    if isinstance(value, memoryview):
        return value.nbytes
    return len(str(value))


def take_rows(
    rows: Iterable[tuple], max_rows: int, max_bytes: int
) -> tuple[list[tuple], Literal["rows", "bytes"] | None]:
    """The rows of a result, fetched one at a time: at most `max_rows` (one more is fetched to learn
    that there are more), together at most `max_bytes`. Returns them and why fetching stopped early."""
    taken: list[tuple] = []
    size = 0
    for row in rows:
        if len(taken) == max_rows:
            return taken, "rows"
        size += sum(value_size(value) for value in row)
        if size > max_bytes:
            if not taken:
                raise QueryError(
                    f"the first row alone is larger than the result size limit ({size_text(max_bytes)}): "
                    "select fewer or shorter columns, e.g. substr(column, 1, 200)"
                )
            return taken, "bytes"
        taken.append(row)
    return taken, None


def unknown_table(name: str, known: list[str]) -> QueryError:
    return QueryError(f"unknown table {name!r}; the tables are: {', '.join(known) or '(none)'}")
