"""The PostgreSQL backend of the SQL MCP server (psycopg 3).

Every call is its own READ ONLY transaction, always rolled back, with `statement_timeout` set for
it. The statement is sent through the extended query protocol (`Cursor.stream`), which refuses a
second statement ("cannot insert multiple commands into a prepared statement") and fetches rows one
at a time, so only `max_rows + 1` rows ever leave the server. Afterwards DISCARD ALL drops what a
statement can leave in the session beyond its transaction (advisory locks, prepared statements).

A read-only transaction does not stop a superuser from reading server files (pg_read_file) or
running programs (COPY … TO PROGRAM): connect as a role that can only SELECT.
"""

from __future__ import annotations

import contextlib
from collections.abc import Generator, Iterator
from itertools import islice
from typing import Any, cast

import psycopg

from .base import NO_RESULT, Column, ConfigError, QueryError, Result, Table, unknown_table

# The setting is local to the transaction; as a SELECT it also takes the snapshot, after which
# "SET TRANSACTION READ WRITE" is refused.
_LIMITS_SQL = (
    "SELECT set_config('statement_timeout', %(ms)s, true), "
    "set_config('idle_in_transaction_session_timeout', %(ms)s, true)"
)

_CHUNKED = psycopg.capabilities.has_stream_chunked()

_TABLES_SQL = """
SELECT n.nspname, c.relname, c.oid,
       CASE WHEN c.relkind IN ('r', 'p', 'm', 'f') AND c.reltuples >= 0 THEN c.reltuples::bigint END
FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
WHERE c.relkind IN ('r', 'p', 'v', 'm', 'f') AND NOT c.relispartition
  AND n.nspname <> 'information_schema' AND n.nspname NOT LIKE 'pg\\_%'
  AND has_schema_privilege(n.oid, 'USAGE') AND has_table_privilege(c.oid, 'SELECT')
ORDER BY n.nspname <> 'public', n.nspname, c.relname
"""

_COLUMNS_SQL = """
SELECT a.attname, format_type(a.atttypid, a.atttypmod), NOT a.attnotnull,
       COALESCE(a.attnum = ANY (i.indkey), false)
FROM pg_catalog.pg_attribute a
LEFT JOIN pg_catalog.pg_index i ON i.indrelid = a.attrelid AND i.indisprimary
WHERE a.attrelid = %s::oid AND a.attnum > 0 AND NOT a.attisdropped
ORDER BY a.attnum
"""


class PostgresBackend:
    """One connection; each call in a fresh read-only transaction that is rolled back."""

    dialect = "PostgreSQL"
    exact_counts = False

    def __init__(self, url: str, timeout_ms: int):
        self._url = url
        self._timeout_ms = timeout_ms
        try:
            self._conn = self._connect()
        except psycopg.Error as exc:
            raise ConfigError(f"cannot connect to PostgreSQL: {exc}") from None

    def _connect(self) -> psycopg.Connection:
        # autocommit: transactions are only the explicit, read-only ones below. No automatic
        # prepared statements: DISCARD ALL would drop them behind psycopg's back.
        conn = psycopg.connect(self._url, autocommit=True, prepare_threshold=None, connect_timeout=10)
        conn.read_only = True
        return conn

    @contextlib.contextmanager
    def _transaction(self) -> Iterator[psycopg.Cursor]:
        """A cursor inside a READ ONLY transaction that is rolled back; psycopg errors become QueryError."""
        try:
            if self._conn.closed:  # lost, or dropped after a COPY: reconnect
                self._conn = self._connect()
        except psycopg.Error as exc:
            raise QueryError(f"cannot connect to PostgreSQL: {exc}") from None
        conn = self._conn
        try:
            with conn.transaction(force_rollback=True), conn.cursor() as cursor:
                cursor.execute(_LIMITS_SQL, {"ms": str(self._timeout_ms)})
                yield cursor
        except psycopg.Error as exc:
            raise QueryError(self._message(exc)) from None
        finally:
            self._reset(conn)

    @staticmethod
    def _reset(conn: psycopg.Connection) -> None:
        try:
            conn.execute("DISCARD ALL")
        except psycopg.Error:  # broken, or stuck in a COPY the statement started: start afresh
            conn.close()

    def _message(self, exc: psycopg.Error) -> str:
        if isinstance(exc, (psycopg.ProgrammingError, psycopg.InternalError)) and exc.sqlstate is None:
            return NO_RESULT  # psycopg's own complaint: a command, a COPY or nothing at all, not rows
        message = str(exc).strip()
        if isinstance(exc, psycopg.errors.QueryCanceled):
            message += f" (time limit {self._timeout_ms} ms)"
        return message

    def _tables(self, cursor: psycopg.Cursor) -> list[tuple[str, int, int | None]]:
        """(name, oid, estimated rows); names outside the public schema are schema-qualified."""
        cursor.execute(_TABLES_SQL)
        return [
            (name if schema == "public" else f"{schema}.{name}", oid, rows)
            for schema, name, oid, rows in cursor.fetchall()
        ]

    def tables(self) -> list[Table]:
        with self._transaction() as cursor:
            return [Table(name, rows) for name, _, rows in self._tables(cursor)]

    def columns(self, table: str) -> list[Column]:
        with self._transaction() as cursor:
            oids = {name: oid for name, oid, _ in self._tables(cursor)}
            oid = oids.get(table.removeprefix("public."))
            if oid is None:
                raise unknown_table(table, list(oids))
            cursor.execute(_COLUMNS_SQL, (oid,))
            return [Column(*row) for row in cursor.fetchall()]

    def query(self, sql: str, max_rows: int) -> Result:
        with self._transaction() as cursor:
            # Chunks (libpq 17+) rather than single rows: far fewer results to drain on cancel.
            # psycopg annotates stream() as an Iterator; it is a generator, whose close() we need.
            stream = cast(
                "Generator[tuple[Any, ...], None, None]",
                cursor.stream(sql, size=max_rows + 1 if _CHUNKED else 1),
            )
            try:
                rows = list(islice(stream, max_rows + 1))
                columns = [c.name for c in cursor.description or ()]
            finally:
                stream.close()  # cancels the statement if rows are left
            if not rows:
                columns = _column_names(cursor.connection, sql)
        return Result(columns, rows[:max_rows], more=len(rows) > max_rows)

    def explain(self, sql: str) -> str:
        with self._transaction() as cursor:
            # "(ANALYZE false)" first, so SQL starting "ANALYZE …" cannot make this EXPLAIN ANALYZE,
            # which runs the statement.
            return "\n".join(row[0] for row in cursor.stream("EXPLAIN (ANALYZE false) " + sql))


def _column_names(conn: psycopg.Connection, sql: str) -> list[str]:
    """The columns of a query that returned no rows: stream() learns them only from a row, so the
    server describes the statement (parsed again, not run)."""
    encoding = conn.info.encoding
    conn.pgconn.prepare(b"", sql.encode(encoding))
    described = conn.pgconn.describe_prepared(b"")
    return [(described.fname(i) or b"?").decode(encoding) for i in range(described.nfields)]
