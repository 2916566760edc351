"""The PostgreSQL backend of the SQL MCP server (psycopg 3).

Every call is its own READ ONLY transaction, always rolled back, with `statement_timeout` set for
it. The statement is sent through the extended query protocol (`Cursor.stream`), which refuses a
second statement ("cannot insert multiple commands into a prepared statement") and fetches rows one
at a time, so no more than `max_rows + 1` rows, and no more than one row past the result size
limit, ever leave the server. Afterwards DISCARD ALL drops what a statement can leave in the session
beyond its transaction (advisory locks, prepared statements).

A read-only transaction does not stop a superuser from reading or writing server files (pg_read_file,
COPY … TO '/file'), running programs (COPY … TO PROGRAM) or signalling backends, nor anyone from
writing through dblink or postgres_fdw, whose connections are not read-only. So every connection
first checks its role (`_ROLE_SQL`) and is refused when it could do any of that.
"""

from __future__ import annotations

import contextlib
from collections.abc import Generator, Iterator
from typing import Any, cast

import psycopg

from .base import NO_RESULT, Column, ConfigError, QueryError, Result, Table, out_of_memory, take_rows, unknown_table

# The setting is local to the transaction; as a SELECT it also takes the snapshot, after which
# "SET TRANSACTION READ WRITE" is refused.
_LIMITS_SQL = (
    "SELECT set_config('statement_timeout', %(ms)s, true), "
    "set_config('idle_in_transaction_session_timeout', %(ms)s, true)"
)

# Predefined roles that reach outside the database: read or write server files, run programs,
# signal (terminate) other backends.
DANGEROUS_ROLES = ("pg_execute_server_program", "pg_read_server_files", "pg_signal_backend", "pg_write_server_files")
# What the connected role could do that a read-only transaction does not prevent. Each pg_has_role
# gets the oid of a role that exists (a version without one of these roles simply has no row).
_ROLE_SQL = """
SELECT current_user::text,
       ARRAY(SELECT rolname::text FROM pg_catalog.pg_roles
             WHERE rolsuper AND pg_has_role(current_user, oid, 'MEMBER') ORDER BY rolname <> current_user, rolname),
       ARRAY(SELECT rolname::text FROM pg_catalog.pg_roles
             WHERE rolname = ANY (%(roles)s) AND pg_has_role(current_user, oid, 'MEMBER') ORDER BY rolname),
       ARRAY(SELECT DISTINCT proname::text FROM pg_catalog.pg_proc
             WHERE (proname LIKE 'dblink%%' OR proname LIKE 'postgres\\_fdw%%')
               AND has_function_privilege(oid, 'EXECUTE') ORDER BY 1)
"""
READER_HINT = (
    "A READ ONLY transaction does not stop such a role from reading or writing server files, running "
    "programs, signalling other sessions or writing through a connection of its own: connect as a role "
    'that can only read (docs/mcp.md, "The SQL MCP server", "A read-only role")'
)

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

    def __init__(self, url: str, timeout_ms: int, max_bytes: int):
        self._url = url
        self._timeout_ms = timeout_ms
        self._max_bytes = max_bytes
        try:
            self._conn = self._connect()
        except psycopg.Error as exc:
            raise ConfigError(f"cannot connect to PostgreSQL: {exc}") from None

    def _connect(self) -> psycopg.Connection:
        """A connection, once its role is known to be safe (ConfigError otherwise)."""
        # autocommit: transactions are only the explicit, read-only ones below. No automatic
        # prepared statements: DISCARD ALL would drop them behind psycopg's back.
        conn = psycopg.connect(self._url, autocommit=True, prepare_threshold=None, connect_timeout=10)
        try:
            row = conn.execute(_ROLE_SQL, {"roles": list(DANGEROUS_ROLES)}).fetchone()
        except BaseException:
            conn.close()
            raise
        assert row is not None  # a SELECT without FROM returns one row
        problems = _role_problems(*row)
        if problems:
            conn.close()
            raise ConfigError(f"refusing to run as PostgreSQL role {row[0]!r}: {'; '.join(problems)}. {READER_HINT}")
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
        except ConfigError as exc:  # the role gained a dangerous privilege since the start
            raise QueryError(str(exc)) from None
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
        message = str(exc).strip()
        if exc.sqlstate is None and message.startswith("out of memory"):  # libpq in this process: RLIMIT_AS
            return out_of_memory()
        if isinstance(exc, (psycopg.ProgrammingError, psycopg.InternalError)) and exc.sqlstate is None:
            return NO_RESULT  # psycopg's own complaint: a command, a COPY or nothing at all, not rows
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
            # Single rows, not chunks: the size limit can then stop after the row that crosses it
            # (a chunk of max_rows wide rows would all be in memory first). Cancelling costs little more.
            # psycopg annotates stream() as an Iterator; it is a generator, whose close() we need.
            stream = cast("Generator[tuple[Any, ...], None, None]", cursor.stream(sql, size=1))
            try:
                rows, cut = take_rows(stream, max_rows, self._max_bytes)
                columns = [c.name for c in cursor.description or ()]
            finally:
                stream.close()  # cancels the statement if rows are left
            if not rows:
                columns = _column_names(cursor.connection, sql)
        return Result(columns, rows, cut)

    def explain(self, sql: str) -> str:
        with self._transaction() as cursor:
            # "(ANALYZE false)" first, so SQL starting "ANALYZE …" cannot make this EXPLAIN ANALYZE,
            # which runs the statement.
            return "\n".join(row[0] for row in cursor.stream("EXPLAIN (ANALYZE false) " + sql))


def _role_problems(user: str, superusers: list[str], roles: list[str], functions: list[str]) -> list[str]:
    """What makes a role unsafe for this server, in words; empty when it is safe."""
    if user in superusers:
        return ["it is a superuser"]
    problems = []
    if superusers:
        problems.append(f"it is a member of the superuser role {', '.join(superusers)}")
    if roles:
        problems.append(f"it is a member of {', '.join(roles)}")
    if functions:
        shown = ", ".join(functions[:3]) + (f" and {len(functions) - 3} more" if len(functions) > 3 else "")
        problems.append(f"it may execute {shown} (dblink/postgres_fdw connections are not read-only)")
    return problems


def _column_names(conn: psycopg.Connection, sql: str) -> list[str]:
    """The columns of a query that returned no rows: stream() learns them only from a row, so the
    server describes the statement (parsed again, not run)."""
    encoding = conn.info.encoding
    conn.pgconn.prepare(b"", sql.encode(encoding))
    described = conn.pgconn.describe_prepared(b"")
    return [(described.fname(i) or b"?").decode(encoding) for i in range(described.nfields)]
