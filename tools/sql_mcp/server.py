"""A read-only SQL MCP server over stdio: `python -m tools.mcp.sql_server <database-url>` (the command
in mcp.json files) or, the same, `python -m tools.sql_mcp <database-url>`.

    sqlite:///var/demo.sqlite3                 a file relative to the working directory
    sqlite:////srv/data/shop.sqlite3           an absolute path (four slashes)
    postgresql://reader@db.example.com/shop    a password comes from PGPASSWORD or ~/.pgpass

Tools, all annotated readOnlyHint: list_tables, describe_table, query, explain. Results are a
markdown table (`| a | b |`, `|---|---|`, rows) and one closing line such as "12 rows". That table
format has a single owner, tools/tables.py: it writes the tables here and reads them back for the
offline model. Refused writes, timeouts and SQL errors are tool errors (is_error) carrying the
database's own message. How writes are refused: sqlite.py (SQLite) and postgres.py (PostgreSQL);
backends.py picks one for the URL.

Environment (all positive integers, declared in aptix/env/): APTIX_SQL_MAX_ROWS, the row cap
(default 200); APTIX_SQL_TIMEOUT_MS, the time limit per call (default 5000); APTIX_SQL_MAX_BYTES, the
result size limit (default 16 MiB: fetching stops there, and on SQLite no value may be longer);
APTIX_SQL_MEMORY_MB, the process's address-space limit (RLIMIT_AS, default 1024, at least 128; the
server runs in about 100), the backstop for whatever the other limits miss.

No Django here: this runs as its own process and must start fast.
"""

from __future__ import annotations

import os
import resource
import sys
import threading
from collections.abc import Callable, Sequence
from typing import Annotated, Any, TypeVar

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import ToolAnnotations
from pydantic import Field

from aptix.env import APTIX_SQL_MAX_BYTES, APTIX_SQL_MAX_ROWS, APTIX_SQL_MEMORY_MB, APTIX_SQL_TIMEOUT_MS
from aptix.envtypes import SettingError
from tools.tables import markdown_table

from .backends import open_backend
from .base import Backend, Column, ConfigError, QueryError, Result, Table, out_of_memory, size_text

USAGE = "usage: python -m tools.mcp.sql_server <sqlite:///path/to/file.sqlite3 | postgresql://user@host/db>"
EXIT_STUCK = 75  # EX_TEMPFAIL: the process gave up a call it could not interrupt; start it again
EXIT_DELAY_SECONDS = 1.0
READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False)

T = TypeVar("T")
# Argument types live at module level: MCPServer evaluates the (string) annotations in this module.
TableArg = Annotated[str, Field(description="A table name as list_tables shows it.")]
SqlArg = Annotated[str, Field(description="One SQL statement in the database's dialect.")]
LimitArg = Annotated[int | None, Field(ge=1, description="Return at most this many rows (the server caps it).")]


# --- text for the model ------------------------------------------------------------------------


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")


def tables_text(tables: list[Table], exact: bool) -> str:
    header = "rows" if exact else "approx_rows"
    rows = [(t.name, "?" if t.rows is None else t.rows) for t in tables]
    note = "" if exact else " (row counts are planner estimates)"
    return markdown_table(["table", header], rows) + "\n\n" + _count(len(tables), "table") + note


def columns_text(columns: list[Column]) -> str:
    rows = [(c.name, c.type, "yes" if c.nullable else "no", "yes" if c.primary_key else "no") for c in columns]
    return markdown_table(["column", "type", "nullable", "pk"], rows) + "\n\n" + _count(len(columns), "column")


def result_text(result: Result, max_bytes: int) -> str:
    n = len(result.rows)
    if result.cut == "rows":
        footer = f"showing the first {n} rows only (row cap {n}); the query has more rows"
    elif result.cut == "bytes":
        limit = size_text(max_bytes)
        footer = f"showing the first {_count(n, 'row')} only (result size limit {limit}); the query has more rows"
    else:
        footer = _count(n, "row")
    return markdown_table(result.columns, result.rows) + "\n\n" + footer


def stuck_after(timeout_ms: int) -> float:
    """Seconds after which a call that ignored the time limit is given up: twice the limit, at least
    one second past it (the backends stop a statement a little after its deadline)."""
    return timeout_ms / 1000 + max(timeout_ms / 1000, 1.0)


# --- the server --------------------------------------------------------------------------------


class Calls:
    """Runs backend calls on a worker thread, one at a time, so a long query never blocks the stdio
    session and the connection is never shared; turns their failures into tool errors.

    The backends stop a statement at the time limit (SQLite's progress handler, PostgreSQL's
    statement_timeout), but nothing interrupts one SQLite function call: replace() or instr() with a
    long pattern is quadratic and runs for hours within the length limit. A thread cannot be killed,
    and the connection stays busy in it, so a call still running `stuck_after` seconds in answers
    with a tool error and the process exits a moment later; the MCP host restarts it.
    """

    def __init__(self, stuck_after: float, timeout_ms: int):
        self._lock = anyio.Lock()
        self._stuck_after = stuck_after
        self._stuck = (
            f"the statement ran past the time limit ({timeout_ms} ms) and could not be interrupted "
            "(one SQLite function call never is): the SQL server restarts"
        )
        self._exiting = False

    async def __call__(self, fn: Callable[..., T], *args: Any) -> T:
        async with self._lock:
            if not self._exiting:
                with anyio.move_on_after(self._stuck_after):
                    try:
                        return await anyio.to_thread.run_sync(fn, *args, abandon_on_cancel=True)
                    except QueryError as exc:
                        raise ToolError(str(exc)) from None
                    except MemoryError:  # the address-space limit: what the call built is garbage now
                        raise ToolError(out_of_memory()) from None
                self._exiting = True
                sys.stderr.write(f"sql_server: {self._stuck}\n")
                # Time for this answer to reach stdout; then end the process and the thread with it.
                threading.Timer(EXIT_DELAY_SECONDS, os._exit, (EXIT_STUCK,)).start()
            raise ToolError(self._stuck)


def build_server(backend: Backend, *, max_rows: int, max_bytes: int, timeout_ms: int) -> MCPServer:
    """The MCP server over one backend; `Calls` runs the backend's calls."""
    server = MCPServer(
        "aptix-sql",
        log_level="WARNING",
        instructions=(
            f"Read-only access to a {backend.dialect} database. Start with list_tables and describe_table; "
            f"query returns at most {max_rows} rows, so aggregate in SQL."
        ),
    )
    call = Calls(stuck_after(timeout_ms), timeout_ms)

    @server.tool(annotations=READ_ONLY, structured_output=False)
    async def list_tables() -> str:
        """List the tables and views you can query, with their row counts."""
        return tables_text(await call(backend.tables), backend.exact_counts)

    @server.tool(annotations=READ_ONLY, structured_output=False)
    async def describe_table(table: TableArg) -> str:
        """The columns of one table: name, type, whether it may be NULL, whether it is in the primary key."""
        return columns_text(await call(backend.columns, table))

    @server.tool(
        annotations=READ_ONLY,
        structured_output=False,
        description=(
            f"Run one read-only {backend.dialect} statement (SELECT, WITH, VALUES, …) and return the rows "
            f"as a markdown table. At most {max_rows} rows and {size_text(max_bytes)} are returned; aggregate "
            "in SQL rather than fetching raw rows. Writes are refused."
        ),
    )
    async def query(sql: SqlArg, limit: LimitArg = None) -> str:
        return result_text(await call(backend.query, sql, min(limit or max_rows, max_rows)), max_bytes)

    @server.tool(
        annotations=READ_ONLY,
        structured_output=False,
        description=(f"Show the {backend.dialect} query plan of one statement without running it."),
    )
    async def explain(sql: SqlArg) -> str:
        return await call(backend.explain, sql)

    return server


def limit_memory(megabytes: int) -> None:
    """Cap the process's address space (RLIMIT_AS; never above a hard limit already set), so that a
    query no other limit catches fails with MemoryError instead of taking the machine's memory."""
    soft = megabytes << 20
    hard = resource.getrlimit(resource.RLIMIT_AS)[1]
    if hard != resource.RLIM_INFINITY:
        soft = min(soft, hard)
    try:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))
    except (ValueError, OSError) as exc:  # a platform without RLIMIT_AS: say so, serve anyway
        sys.stderr.write(f"sql_server: cannot limit the address space to {megabytes} MiB: {exc}\n")


def main(argv: Sequence[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else list(argv)
    if len(args) != 1:
        sys.stderr.write(USAGE + "\n")
        return 2
    try:
        max_rows = APTIX_SQL_MAX_ROWS.read()
        timeout_ms = APTIX_SQL_TIMEOUT_MS.read()
        max_bytes = APTIX_SQL_MAX_BYTES.read()
        memory_mb = APTIX_SQL_MEMORY_MB.read()
        if argv is None:  # run as a command, in its own process; a caller passing argv (a test) keeps its limits
            limit_memory(memory_mb)
        backend = open_backend(args[0], timeout_ms=timeout_ms, max_bytes=max_bytes)
    except (ConfigError, SettingError) as exc:
        sys.stderr.write(f"sql_server: {exc}\n")
        return 1
    build_server(backend, max_rows=max_rows, max_bytes=max_bytes, timeout_ms=timeout_ms).run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
