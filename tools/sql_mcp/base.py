"""What every backend of the SQL MCP server shares: the Backend protocol, its result types and errors.

A backend holds one connection and runs one statement per call, fetching at most `max_rows + 1`
rows under a deadline per call. Read-only is a property of the connection, never of the SQL text,
which is not inspected. The backends (sqlite.py, postgres.py) import this module and nothing else
of this package; backends.py picks one for a URL.

No Django here: the server is its own process and must start fast.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

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
    more: bool  # the statement had rows beyond the cap (they were never fetched)


class Backend(Protocol):
    dialect: str  # "SQLite" or "PostgreSQL", for the tool descriptions
    exact_counts: bool  # whether Table.rows are exact or planner estimates

    def tables(self) -> list[Table]: ...

    def columns(self, table: str) -> list[Column]: ...

    def query(self, sql: str, max_rows: int) -> Result: ...

    def explain(self, sql: str) -> str: ...


def unknown_table(name: str, known: list[str]) -> QueryError:
    return QueryError(f"unknown table {name!r}; the tables are: {', '.join(known) or '(none)'}")
