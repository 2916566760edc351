"""The SQL MCP server's resource limits on SQLite, as a real subprocess: the length limit, the result
size limit, the time limit inside expensive function calls, the address-space limit, and functions
that leak memory addresses (finding 7 of the security run).

Before the fix, `SELECT replace(hex(zeroblob(100000000)),'0','x')` succeeded: the server process
peaked at 925 MB and answered after 2.4 s under a 500 ms time limit.
"""

from __future__ import annotations

import contextlib
import time
from pathlib import Path

import pytest
import pytest_asyncio

from tests.tools.sql_mcp.helpers import (
    SqlServer,
    address_space_limit,
    exited,
    peak_rss_mb,
    sqlite_fingerprint,
    text,
    tool_error,
)
from tools.demo_data import build_demo_database
from tools.sql_mcp.sqlite import MIN_LENGTH_LIMIT

pytestmark = [pytest.mark.slow, pytest.mark.asyncio(loop_scope="module")]

ZEROBLOB = "SELECT replace(hex(zeroblob(100000000)),'0','x')"  # a 200 MB string from 50 bytes of SQL
# An 8 MB string built anew for each row (SQLite cannot hoist it): every row costs ~75 ms in a few VM
# steps. The progress handler used to run every 1000 steps: the call took 2-3 s under a 500 ms limit.
HEAVY_ROWS = (
    "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 1000) "
    "SELECT max(length(replace(hex(zeroblob(4000000 + x)), '0', 'x'))) FROM c"
)
# replace() with a long pattern that almost matches everywhere is quadratic: one function call, one
# VM step, minutes of CPU, and a tiny result.
QUADRATIC = "SELECT length(replace(hex(zeroblob(4000000)), hex(zeroblob(400000)) || '1', 'x')) AS n"
# Rows of 1000 filler characters and their number: 1001 to 1004 bytes each.
FILLER_ROWS = (
    "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 1000) "
    "SELECT x, replace(hex(zeroblob(500)), '0', 'y') AS filler FROM c"
)


@pytest.fixture(scope="module")
def demo_db(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("sqlite-limits") / "demo.sqlite3"
    build_demo_database(path)
    return path


@contextlib.asynccontextmanager
async def _started(server: SqlServer):
    session = await server.start()
    try:
        yield server, session
    finally:
        await server.stop()


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def default(demo_db):
    """A server with the default limits but a 500 ms time limit."""
    async with _started(SqlServer(f"sqlite:///{demo_db}", APTIX_SQL_TIMEOUT_MS="500")) as started:
        yield started


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def small(demo_db):
    """A server allowed 10 KiB of result and 512 MiB of address space."""
    server = SqlServer(f"sqlite:///{demo_db}", APTIX_SQL_MAX_BYTES="10240", APTIX_SQL_MEMORY_MB="512")
    async with _started(server) as started:
        yield started


async def test_a_huge_value_is_refused_at_once_and_costs_no_memory(default):
    server, session = default
    started = time.monotonic()
    result = await session.call_tool("query", {"sql": ZEROBLOB})
    assert tool_error(result) == "string or blob too big: no value, even mid-query, may exceed 16 MiB here"
    assert time.monotonic() - started < 0.5
    assert peak_rss_mb(server.pid) < 150
    assert not (await session.call_tool("query", {"sql": "SELECT 1 AS one"})).is_error


async def test_the_time_limit_holds_for_expensive_function_calls(default):
    _, session = default
    started = time.monotonic()
    result = await session.call_tool("query", {"sql": HEAVY_ROWS})
    assert tool_error(result) == "interrupted: the statement ran past the time limit (500 ms)"
    assert time.monotonic() - started < 1.2  # ~0.6 s; the server gives a call up at 1.5 s


async def test_fts3_tokenizer_is_refused_for_it_leaks_an_address(default, demo_db):
    _, session = default
    pristine = sqlite_fingerprint(demo_db)
    for sql_text in ("SELECT fts3_tokenizer('simple')", "SELECT hex(FTS3_TOKENIZER('porter')) AS p"):
        result = await session.call_tool("query", {"sql": sql_text})
        message = tool_error(result).lower()  # SQLite names the function as written
        assert (
            message
            == "not authorized to use function: fts3_tokenizer: it reveals memory addresses, so this server refuses it"
        )
    assert sqlite_fingerprint(demo_db) == pristine


async def test_the_default_address_space_limit_is_1_gib(default):
    server, _ = default
    assert address_space_limit(server.pid) == str(1 << 30)


async def test_a_result_stops_at_the_size_limit(small):
    _, session = small
    result = await session.call_tool("query", {"sql": FILLER_ROWS})
    assert not result.is_error
    lines = text(result).split("\n")
    assert lines[11].startswith("| 10 | yyy") and lines[12] == ""  # rows 1-10: 10 011 bytes, row 11 passes 10 KiB
    assert lines[-1] == "showing the first 10 rows only (result size limit 10 KiB); the query has more rows"
    too_wide = await session.call_tool("query", {"sql": "SELECT 1 AS n, hex(zeroblob(6000)) AS wide"})
    assert tool_error(too_wide) == (
        "the first row alone is larger than the result size limit (10 KiB): "
        "select fewer or shorter columns, e.g. substr(column, 1, 200)"
    )


async def test_values_in_mid_query_may_reach_1_mib_under_a_small_result_limit(small):
    """SQLite reads its own schema under the length limit too, so it is never below 1 MiB."""
    _, session = small
    fits = await session.call_tool("query", {"sql": f"SELECT length(zeroblob({MIN_LENGTH_LIMIT})) AS n"})
    assert text(fits) == f"| n |\n|---|\n| {MIN_LENGTH_LIMIT} |\n\n1 row"
    too_big = await session.call_tool("query", {"sql": f"SELECT length(zeroblob({MIN_LENGTH_LIMIT + 1})) AS n"})
    assert tool_error(too_big) == "string or blob too big: no value, even mid-query, may exceed 1 MiB here"


async def test_memory_past_the_address_space_limit_fails_the_call_not_the_server(demo_db):
    # A length limit of 400 MB lets the zeroblob query run: it needs ~900 MB, the server may map 512 MiB.
    server = SqlServer(f"sqlite:///{demo_db}", APTIX_SQL_MAX_BYTES="400000000", APTIX_SQL_MEMORY_MB="512")
    async with _started(server) as (_, session):
        pid = server.pid
        assert address_space_limit(pid) == str(512 << 20)
        result = await session.call_tool("query", {"sql": ZEROBLOB})
        assert tool_error(result) == (
            "out of memory: the statement needed more memory than the SQL server may use (512 MiB); fetch less"
        )
        assert peak_rss_mb(pid) < 512
        assert text(await session.call_tool("query", {"sql": "SELECT 1 AS one"})).endswith("1 row")


async def test_a_call_no_interrupt_reaches_ends_the_process(demo_db):
    server = SqlServer(f"sqlite:///{demo_db}", APTIX_SQL_TIMEOUT_MS="500")
    session = await server.start()
    started = time.monotonic()
    result = await session.call_tool("query", {"sql": QUADRATIC})
    assert tool_error(result) == (
        "the statement ran past the time limit (500 ms) and could not be interrupted "
        "(one SQLite function call never is): the SQL server restarts"
    )
    assert time.monotonic() - started < 3  # given up at twice the limit, at least 1 s past it (was 184 s)
    await exited(server.pid)  # and the process ends (the MCP host restarts it)
    await server.stop()
