"""Model-written SQL over a session's tables, in a sandbox.

Each query gets its own in-memory DuckDB: the session's table files are ATTACHed READ_ONLY (each
is a DuckDB database written once at upload, files/ingest/tables.py), a view per table carries the
name the model sees, and only then is the connection locked down: `enable_external_access=false`
(no file system, no network: read_csv('/etc/passwd'), COPY … TO, ATTACH, INSTALL/LOAD fail) and
`lock_configuration=true` (no SET, RESET or PRAGMA changes what follows), within a memory limit and
a thread limit. The statement must be exactly one SELECT (WITH … SELECT included), as DuckDB's own
parser classifies it, and a timer interrupts it at APTIX_FILES_QUERY_TIMEOUT."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

import duckdb
from django.conf import settings

from . import storage
from .ingest.common import first_line

COUNT_LIMIT = 1_000_000  # rows counted past the ones shown; a larger result says "more than"


class QueryRefused(Exception):
    """The SQL is not one read-only SELECT, or it failed or ran out of time: `str()` says why, for
    the model."""


@dataclass(frozen=True)
class QueryResult:
    columns: list[str]
    rows: list[tuple]
    total: int  # the result's rows (COUNT_LIMIT at most; `more` says there were more)
    more: bool = False


def check_statement(sql: str) -> str:
    """The one SELECT statement in `sql`, or QueryRefused saying what was found instead."""
    text = (sql or "").strip()
    if not text:
        raise QueryRefused("Give one SELECT statement (WITH … SELECT is fine).")
    try:
        statements = duckdb.extract_statements(text)
    except duckdb.Error as exc:
        raise QueryRefused(f"The SQL does not parse: {first_line(exc)}") from None
    if len(statements) != 1:
        raise QueryRefused(f"Give exactly one statement; this SQL has {len(statements)}.")
    if system := system_names(text):
        raise QueryRefused(
            f"{system[0]} is DuckDB's own catalog or settings, not a table of the session's files: query the "
            "tables files_list lists."
        )
    kind = statements[0].type
    if kind != duckdb.StatementType.SELECT:
        name = getattr(kind, "name", str(kind))
        raise QueryRefused(
            f"Only a read-only SELECT (or WITH … SELECT) runs here; this is a {name} statement. The files' "
            "tables cannot be changed, and settings, files outside them, extensions and the network are out of reach."
        )
    return text


# DuckDB's table functions and settings about itself (duckdb_databases(), pragma_database_list,
# duckdb_settings(), current_setting(...)) name the files the sandbox attached: paths of the server's.
SYSTEM_PREFIXES = ("duckdb_", "pragma_")
SYSTEM_NAMES = frozenset({"current_setting", "getenv", "getvariable"})


def system_names(sql: str) -> list[str]:
    """The names in `sql` (as DuckDB's tokenizer finds them) of DuckDB's own catalog and settings."""
    tokens = duckdb.tokenize(sql)
    found = []
    for index, (start, kind) in enumerate(tokens):
        if kind not in (duckdb.token_type.identifier, duckdb.token_type.keyword):
            continue
        end = tokens[index + 1][0] if index + 1 < len(tokens) else len(sql)
        name = sql[start:end].strip().strip('"').lower()
        if name.startswith(SYSTEM_PREFIXES) or name in SYSTEM_NAMES:
            found.append(sql[start:end].strip())
    return found


def run_query(
    tables: list[tuple[str, str, str]], sql: str, *, max_rows: int, timeout: float | None = None
) -> QueryResult:
    """Run `sql` over `tables` ((view name, the table's name inside its DuckDB file, that file's
    storage name)) in the sandbox; at most `max_rows` rows come back, all are counted."""
    statement = check_statement(sql)
    connection = sandbox_connection(tables)
    seconds = settings.APTIX_FILES_QUERY_TIMEOUT if timeout is None else timeout
    timer = threading.Timer(seconds, connection.interrupt)
    timer.daemon = True
    timer.start()
    try:
        # As a subquery, so that DuckDB computes the rows shown and counts the others itself (a Top N
        # keeps the statement's order): a result fetched from the statement itself is materialised
        # whole in this process first, however few rows are read.
        query = bare_query(statement)
        cursor = connection.execute(f"SELECT * FROM (\n{query}\n) AS result LIMIT {max(max_rows, 0)}")
        columns = [d[0] for d in cursor.description or []]
        rows = cursor.fetchall()
        total = rows_counted(connection, query) if len(rows) == max_rows else len(rows)
        if total > COUNT_LIMIT:
            return QueryResult(columns, rows, COUNT_LIMIT, more=True)
        return QueryResult(columns, rows, total)
    except duckdb.InterruptException:
        raise QueryRefused(
            f"The query ran past the time limit of {seconds:g} s and was stopped. Aggregate or filter "
            "more, or add a LIMIT."
        ) from None
    except duckdb.OutOfMemoryException:
        raise QueryRefused(
            f"The query needed more than the memory limit of {settings.APTIX_FILES_QUERY_MEMORY_MB} MB. "
            "Aggregate or filter more."
        ) from None
    except duckdb.PermissionException:
        raise QueryRefused(
            "Only the session's tables can be read: files, the network, extensions and settings are out of reach."
        ) from None
    except duckdb.CatalogException as exc:  # a table that is not there: name the ones that are
        names = ", ".join(view for view, _, _ in tables) or "none"
        raise QueryRefused(f"The query failed: {first_line(exc)} The tables are: {names}.") from None
    except duckdb.Error as exc:
        raise QueryRefused(f"The query failed: {first_line(exc)}") from None
    finally:
        timer.cancel()
        connection.close()


def bare_query(statement: str) -> str:
    """The one statement without its closing semicolon and the comments after it, to be a subquery."""
    tokens = duckdb.tokenize(statement)
    code = [start for start, kind in tokens if kind != duckdb.token_type.comment]
    if code and statement[code[-1] :].startswith(";"):
        return statement[: code[-1]]
    return statement


def rows_counted(connection: duckdb.DuckDBPyConnection, query: str) -> int:
    """The rows `query` yields, up to COUNT_LIMIT + 1, counted inside DuckDB: none comes out into this
    process (the projection is dropped, so a wide column is not even computed)."""
    counting = f"SELECT count(*) FROM (SELECT 1 FROM (\n{query}\n) AS result LIMIT {COUNT_LIMIT + 1}) AS counted"
    found = connection.execute(counting).fetchone()
    return int(found[0]) if found else 0


def sandbox_connection(tables: list[tuple[str, str, str]]) -> duckdb.DuckDBPyConnection:
    connection = duckdb.connect(
        ":memory:",
        config={
            "threads": settings.APTIX_FILES_QUERY_THREADS,
            "memory_limit": f"{settings.APTIX_FILES_QUERY_MEMORY_MB}MB",
            "autoinstall_known_extensions": False,
            "autoload_known_extensions": False,
        },
    )
    try:
        attached: dict[str, str] = {}
        for view, source, data_name in tables:
            if data_name not in attached:
                alias = f"file{len(attached)}"
                path = storage.local_path(data_name)
                connection.execute(f"ATTACH {quote_literal(path)} AS {alias} (READ_ONLY)")
                attached[data_name] = alias
            target = f"{attached[data_name]}.main.{quote_identifier(source)}"
            connection.execute(f"CREATE VIEW {quote_identifier(view)} AS SELECT * FROM {target}")
        # No temporary files either: a query that does not fit the memory limit fails instead of spilling.
        connection.execute("SET temp_directory = ''")
        connection.execute("SET enable_external_access = false")
        connection.execute("SET lock_configuration = true")
    except BaseException:
        connection.close()
        raise
    return connection


def quote_identifier(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def quote_literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def session_tables(files: list[Any]) -> list[tuple[str, str, str]]:
    """(view name, source table, DuckDB storage name) of every table of `files` (SessionFile rows)."""
    return [
        (table["name"], table["source"], upload.data_name)
        for upload in files
        if upload.kind == "table" and upload.data_name
        for table in upload.tables
    ]
