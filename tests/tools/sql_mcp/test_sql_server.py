"""The SQL MCP server on SQLite, as a real subprocess over stdio: browsing, querying, and a corpus of
attempts to write or escape that must all be refused (or bounded) with the file left unchanged."""

from __future__ import annotations

import asyncio
import sqlite3
import time
from pathlib import Path

import pytest
import pytest_asyncio

from agents.llm.offline.data import REVENUE_BY_MONTH_SQL
from agents.llm.offline.tables import chart_of, parse_table
from tests.tools.sql_mcp.helpers import SqlServer, sqlite_fingerprint, text
from tools.demo_data import build_demo_database, read_rows

pytestmark = pytest.mark.asyncio(loop_scope="module")

COUNT_TO_A_BILLION = (
    "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 1000000000) SELECT count(*) FROM c"
)
A_MILLION_ROWS = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 1000000) SELECT x FROM c"


@pytest.fixture(scope="module")
def demo_db(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("sqlite") / "demo.sqlite3"
    build_demo_database(path)
    return path


@pytest.fixture(scope="module")
def pristine(demo_db):
    """The database's fingerprint before the server ever opened it."""
    return sqlite_fingerprint(demo_db)


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def sql(demo_db, pristine):
    server = SqlServer(f"sqlite:///{demo_db}", APTIX_SQL_TIMEOUT_MS="500")  # an absolute path: sqlite:////…
    yield await server.start()
    await server.stop()


async def test_the_fingerprint_sees_a_write(demo_db, pristine, tmp_path):
    copy = tmp_path / demo_db.name
    copy.write_bytes(demo_db.read_bytes())
    assert sqlite_fingerprint(copy) == pristine
    conn = sqlite3.connect(copy)
    with conn:
        conn.execute("UPDATE products SET price = price + 1 WHERE id = 1")
    conn.close()
    assert sqlite_fingerprint(copy) != pristine


async def test_offers_four_read_only_tools(sql):
    tools = (await sql.list_tools()).tools
    assert sorted(t.name for t in tools) == ["describe_table", "explain", "list_tables", "query"]
    assert all(t.annotations.read_only_hint for t in tools)
    assert "SQLite" in next(t.description for t in tools if t.name == "query")


async def test_list_tables_with_row_counts(sql):
    result = await sql.call_tool("list_tables", {})
    counts = {table: len(read_rows(table)[1]) for table in ("customers", "orders", "products")}
    assert not result.is_error
    assert text(result) == (
        "| table | rows |\n|---|---|\n"
        f"| customers | {counts['customers']} |\n| orders | {counts['orders']} |\n| products | {counts['products']} |"
        "\n\n3 tables"
    )


async def test_describe_table(sql):
    result = await sql.call_tool("describe_table", {"table": "orders"})
    assert parse_table(text(result)) == (
        ["column", "type", "nullable", "pk"],
        [
            ["id", "INTEGER", "no", "yes"],
            ["customer_id", "INTEGER", "no", "no"],
            ["product_id", "INTEGER", "no", "no"],
            ["quantity", "INTEGER", "no", "no"],
            ["unit_price", "REAL", "no", "no"],
            ["ordered_at", "TEXT", "no", "no"],
        ],
    )
    assert text(result).endswith("\n\n6 columns")


async def test_describe_unknown_table_names_the_real_ones(sql):
    result = await sql.call_tool("describe_table", {"table": "invoices"})
    assert result.is_error
    assert "unknown table 'invoices'; the tables are: customers, orders, products" in text(result)


async def test_revenue_by_month_is_a_table_the_offline_model_reads(sql):
    result = await sql.call_tool("query", {"sql": REVENUE_BY_MONTH_SQL})
    columns, rows = parse_table(text(result))
    assert columns == ["month", "revenue"]
    assert [row[0] for row in rows] == [f"2025-{m:02d}" for m in range(1, 13)]
    assert text(result).endswith("\n\n12 rows")
    _, values, _, _ = chart_of(text(result))
    assert values[11] > values[7]  # the holiday peak beats the summer dip


async def test_an_empty_result_keeps_its_header(sql):
    result = await sql.call_tool("query", {"sql": "SELECT id, name FROM customers WHERE 0"})
    assert text(result) == "| id | name |\n|---|---|\n\n0 rows"


async def test_cells_stay_on_one_line_and_short(sql):
    result = await sql.call_tool(
        "query",
        {"sql": "SELECT NULL AS a, 'x|y' AS b, 'one' || char(10) || 'two' AS c, x'00ff' AS d, hex(zeroblob(200)) AS e"},
    )
    _, _, row, _, footer = text(result).split("\n")
    assert row == "| NULL | x\\|y | one\\ntwo | \\x00ff | " + "0" * 199 + "… |"
    assert footer == "1 row"


async def test_limit_and_row_cap_bound_a_million_rows(sql):
    limited = await sql.call_tool("query", {"sql": "SELECT id, customer_id FROM orders ORDER BY id", "limit": 3})
    assert [row[0] for row in parse_table(text(limited))[1]] == ["1", "2", "3"]
    assert text(limited).endswith("showing the first 3 rows only (row cap 3); the query has more rows")
    started = time.monotonic()
    capped = await sql.call_tool("query", {"sql": A_MILLION_ROWS, "limit": 10_000})
    assert time.monotonic() - started < 2
    lines = text(capped).split("\n")
    assert len(lines) == 2 + 200 + 2 and lines[-3] == "| 200 |"
    assert lines[-1] == "showing the first 200 rows only (row cap 200); the query has more rows"


async def test_a_runaway_query_is_interrupted_at_the_time_limit(sql):
    started = time.monotonic()
    result = await sql.call_tool("query", {"sql": COUNT_TO_A_BILLION})
    assert result.is_error and "interrupted: the statement ran past the time limit (500 ms)" in text(result)
    assert time.monotonic() - started < 3
    assert not (await sql.call_tool("query", {"sql": "SELECT 1 AS one, 2 AS two"})).is_error


async def test_a_slow_query_does_not_hold_up_the_session(sql):
    slow = asyncio.create_task(sql.call_tool("query", {"sql": COUNT_TO_A_BILLION}))
    assert len((await sql.list_tools()).tools) == 4  # answered while the query runs on its thread
    assert not slow.done()
    quick = await asyncio.gather(*(sql.call_tool("query", {"sql": f"SELECT {n} AS n, 'x' AS x"}) for n in range(5)))
    assert [parse_table(text(r))[1] for r in quick] == [[[str(n), "x"]] for n in range(5)]  # queued, one at a time
    assert (await slow).is_error


async def test_explain_shows_the_plan_without_running(sql):
    result = await sql.call_tool(
        "explain",
        {"sql": "SELECT c.name, count(*) FROM orders o JOIN customers c ON c.id = o.customer_id GROUP BY c.name"},
    )
    assert not result.is_error
    assert "SEARCH c USING INTEGER PRIMARY KEY" in text(result) and "|" not in text(result)


# Each must fail with the database's message; the comment says which layer refuses it.
REFUSED = [
    ("SELECT 1; DELETE FROM orders", "You can only execute one statement at a time"),  # sqlite3: one statement
    ("SELECT 1; ATTACH DATABASE '{dir}/attached.db' AS x", "You can only execute one statement at a time"),
    ("COMMIT; DROP TABLE orders", "not authorized: TRANSACTION COMMIT"),  # the authorizer, from here on
    ("BEGIN; DELETE FROM orders", "not authorized: TRANSACTION BEGIN"),
    ("; DELETE FROM orders", "not authorized: DELETE orders"),
    ("/* x */ DELETE FROM orders", "not authorized: DELETE orders"),
    ("-- x\nDELETE FROM orders", "not authorized: DELETE orders"),
    ("INSERT INTO products (id, name, category, price) VALUES (99, 'x', 'y', 1)", "not authorized: INSERT products"),
    ("REPLACE INTO products SELECT * FROM products", "not authorized: INSERT products"),
    ("UPDATE products SET price = 0", "not authorized: UPDATE products"),
    ("DROP TABLE orders", "not authorized: DELETE sqlite_master"),
    ("ALTER TABLE orders ADD COLUMN note TEXT", "not authorized: ALTER TABLE orders"),
    ("CREATE TABLE t (x INTEGER)", "not authorized: INSERT sqlite_master"),
    ("CREATE TEMP TABLE t (x INTEGER)", "not authorized: INSERT sqlite_temp_master"),
    ("CREATE TRIGGER t AFTER INSERT ON orders BEGIN DELETE FROM orders; END", "not authorized: CREATE TRIGGER t"),
    ("BEGIN", "not authorized: TRANSACTION BEGIN"),
    ("ROLLBACK", "not authorized: TRANSACTION ROLLBACK"),
    ("SAVEPOINT s", "not authorized: SAVEPOINT"),
    ("ATTACH DATABASE '{dir}/attached.db' AS x", "not authorized: ATTACH"),  # also the attached-database limit
    ("VACUUM", "ATTACH"),  # VACUUM attaches a scratch database
    ("VACUUM INTO '{dir}/copy.db'", "ATTACH"),
    ("REINDEX", "not authorized: REINDEX"),
    ("ANALYZE", "not authorized: ANALYZE"),
    ("PRAGMA journal_mode = DELETE", "not authorized: PRAGMA journal_mode"),
    ("PRAGMA writable_schema = ON", "not authorized: PRAGMA writable_schema"),
    ("PRAGMA query_only = OFF", "not authorized: PRAGMA query_only"),
    ("PRAGMA wal_checkpoint", "not authorized: PRAGMA wal_checkpoint"),
    ("UPDATE sqlite_master SET sql = NULL", "may not be modified"),  # SQLite itself
    ("SELECT load_extension('/tmp/libevil')", "not authorized"),
    ("WITH d AS (DELETE FROM orders RETURNING *) SELECT * FROM d", "syntax error"),  # not even SQLite syntax
    ("SET TRANSACTION READ WRITE", "syntax error"),
    ("", "the statement returned no result set"),
]


@pytest.mark.parametrize(("sql_text", "message"), REFUSED, ids=[sql for sql, _ in REFUSED])
async def test_refused(sql, demo_db, pristine, sql_text, message):
    result = await sql.call_tool("query", {"sql": sql_text.format(dir=demo_db.parent)})
    assert result.is_error
    assert message in text(result)
    assert sqlite_fingerprint(demo_db) == pristine  # bytes, content, and no new file beside it


@pytest.mark.parametrize("sql_text", ["DELETE FROM orders", "COMMIT; DROP TABLE orders"])
async def test_explain_refuses_writes_too(sql, demo_db, pristine, sql_text):
    result = await sql.call_tool("explain", {"sql": sql_text})
    assert result.is_error
    assert sqlite_fingerprint(demo_db) == pristine


async def test_no_setting_lets_a_later_write_through(sql, demo_db, pristine):
    for sql_text in (
        "PRAGMA writable_schema = ON",
        "PRAGMA query_only = OFF",
        "DELETE FROM orders",
        "UPDATE sqlite_master SET sql = NULL WHERE name = 'orders'",
    ):
        assert (await sql.call_tool("query", {"sql": sql_text})).is_error
    assert sqlite_fingerprint(demo_db) == pristine
