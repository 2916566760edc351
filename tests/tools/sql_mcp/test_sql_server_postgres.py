"""The SQL MCP server on PostgreSQL, as a real subprocess over stdio (run under bin/with-postgres).

A database of its own holds the demo data. Two servers read it: one as a SELECT-only role (the
set-up docs/mcp.md recommends) and one as a role that may write the tables, create databases and
roles, to show that the read-only transaction and the extended protocol refuse writes even then.
Cases refused only by the role's privileges (reading server files, running programs, signalling
backends) are not run as the writer. A superuser, which can do those things inside a read-only
transaction, is refused at start (test_sql_server_postgres_roles.py).
"""

from __future__ import annotations

import hashlib
import secrets
import time
from dataclasses import dataclass
from pathlib import Path

import psycopg
import pytest
import pytest_asyncio
from psycopg import sql as pgsql

from tests.tools.sql_mcp.helpers import ADMIN_URL, NEEDS_POSTGRES, SqlServer, pg_url, text
from tools.demo_data import load_demo_postgres

pytestmark = [
    pytest.mark.serial,  # one demo database and cluster-wide roles: not shared with a parallel worker
    *NEEDS_POSTGRES,
    pytest.mark.asyncio(loop_scope="module"),
]

PWNED = Path(f"/tmp/aptix-pwned-{secrets.token_hex(4)}")
EXTRAS = """
CREATE SEQUENCE invoice_numbers;
CREATE PROCEDURE purge_orders() LANGUAGE sql AS $$ DELETE FROM orders $$;
CREATE FUNCTION purge_orders_as_owner() RETURNS void LANGUAGE sql SECURITY DEFINER AS $$ DELETE FROM orders $$;
"""


@dataclass(frozen=True)
class Demo:
    reader_url: str
    writer_url: str
    superuser: str
    admin: psycopg.Connection  # the superuser, connected to the demo database


@pytest.fixture(scope="module")
def demo():
    """A throwaway database with the demo data, a role that may only read it and one that may write it."""
    name, reader, writer, password = (
        f"aptix_mcp_demo_{secrets.token_hex(4)}",
        f"aptix_reader_{secrets.token_hex(4)}",
        f"aptix_writer_{secrets.token_hex(4)}",
        secrets.token_urlsafe(16),
    )
    with psycopg.connect(ADMIN_URL, autocommit=True) as server:
        server.execute(pgsql.SQL("CREATE DATABASE {}").format(pgsql.Identifier(name)))
        for role, extra in ((reader, ""), (writer, " CREATEDB CREATEROLE")):
            server.execute(
                pgsql.SQL("CREATE ROLE {} LOGIN PASSWORD {}" + extra).format(
                    pgsql.Identifier(role), pgsql.Literal(password)
                )
            )
    admin = psycopg.connect(pg_url(ADMIN_URL, dbname=name), autocommit=True)
    try:
        load_demo_postgres(admin)
        admin.execute(EXTRAS)
        # The reader: SELECT on the tables only. USAGE and UPDATE on the sequence, so that nextval()
        # and setval() are refused by the read-only transaction rather than by a missing privilege.
        # The writer: everything on the tables, the sequence and the schema.
        admin.execute(
            pgsql.SQL(
                "GRANT SELECT ON ALL TABLES IN SCHEMA public TO {r}; "
                "GRANT USAGE, UPDATE ON SEQUENCE invoice_numbers TO {r}; "
                "GRANT ALL ON ALL TABLES IN SCHEMA public TO {w}; "
                "GRANT ALL ON SEQUENCE invoice_numbers TO {w}; GRANT ALL ON SCHEMA public TO {w}"
            ).format(r=pgsql.Identifier(reader), w=pgsql.Identifier(writer))
        )
        yield Demo(
            pg_url(ADMIN_URL, dbname=name, user=reader, password=password),
            pg_url(ADMIN_URL, dbname=name, user=writer, password=password),
            admin.execute("SELECT current_user").fetchone()[0],
            admin,
        )
    finally:
        admin.close()
        with psycopg.connect(ADMIN_URL, autocommit=True) as server:
            server.execute(pgsql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(pgsql.Identifier(name)))
            for role in (reader, writer):
                server.execute(pgsql.SQL("DROP ROLE IF EXISTS {}").format(pgsql.Identifier(role)))


CATALOG_QUERIES = (
    "SELECT string_agg(proname, ',' ORDER BY proname) FROM pg_proc WHERE pronamespace = 'public'::regnamespace",
    "SELECT string_agg(nspname, ',' ORDER BY nspname) FROM pg_namespace",
    "SELECT string_agg(rolname, ',' ORDER BY rolname) FROM pg_roles",
    "SELECT count(*) FROM pg_largeobject_metadata",
)


def fingerprint(conn: psycopg.Connection) -> str:
    """Every relation's rows (sequences included), the functions, schemas, roles and large objects."""
    relations = [
        r
        for (r,) in conn.execute(
            "SELECT c.oid::regclass::text FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE c.relkind IN ('r', 'p', 'v', 'm', 'S') AND n.nspname NOT IN ('pg_catalog', 'information_schema') "
            "AND n.nspname NOT LIKE 'pg\\_toast%' ORDER BY 1"
        )
    ]
    rows = pgsql.SQL("SELECT string_agg(row(t.*)::text, E'\\n' ORDER BY row(t.*)::text) FROM {} t")
    parts = [repr(relations)]
    for relation in relations:
        parts.append(conn.execute(rows.format(pgsql.SQL(relation))).fetchone()[0] or "")
    for catalog_query in CATALOG_QUERIES:
        parts.append(str(conn.execute(catalog_query).fetchone()[0]))
    return hashlib.sha256("\x00".join(parts).encode()).hexdigest()


@pytest.fixture(scope="module")
def pristine(demo) -> str:
    return fingerprint(demo.admin)


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def reader(demo, pristine):
    # 5 s: the limit must stay above the longest stall of a loaded 2-core CI machine. Measured: the
    # first row of `SELECT generate_series(...)` comes after 4 ms, but 1 time in 150 after 55 ms, and a
    # CI run once saw the capped query fail at a 2 s limit (and earlier, at 500 ms) before its rows came.
    server = SqlServer(demo.reader_url, APTIX_SQL_TIMEOUT_MS="5000")
    yield await server.start()
    await server.stop()


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def writer(demo, pristine):
    server = SqlServer(demo.writer_url, APTIX_SQL_TIMEOUT_MS="500")
    yield await server.start()
    await server.stop()


async def test_the_fingerprint_sees_a_write(demo, pristine):
    with demo.admin.transaction(force_rollback=True):
        demo.admin.execute("UPDATE products SET price = price + 1 WHERE id = 1")
        assert fingerprint(demo.admin) != pristine


async def test_browse_and_query(reader):
    tables = await reader.call_tool("list_tables", {})
    assert text(tables).startswith("| table | approx_rows |\n|---|---|\n| customers | 60 |\n| orders |")
    assert text(tables).endswith("3 tables (row counts are planner estimates)")
    columns = await reader.call_tool("describe_table", {"table": "public.products"})
    assert "| price | numeric(10,2) | no | no |" in text(columns) and "| id | integer | no | yes |" in text(columns)
    monthly = await reader.call_tool(
        "query",
        {
            "sql": "SELECT to_char(ordered_at, 'YYYY-MM') AS month, "
            "sum(quantity * unit_price) AS revenue FROM orders "
            "GROUP BY 1 ORDER BY 1"
        },
    )
    assert text(monthly).startswith("| month | revenue |\n|---|---|\n| 2025-01 | ")
    assert text(monthly).endswith("\n\n12 rows")
    empty = await reader.call_tool("query", {"sql": "SELECT id, name FROM customers WHERE name LIKE '%nobody%'"})
    assert text(empty) == "| id | name |\n|---|---|\n\n0 rows"
    plan = await reader.call_tool("explain", {"sql": "SELECT * FROM orders WHERE id = 7"})
    assert "orders_pkey" in text(plan)


async def test_unknown_table_names_the_real_ones(reader):
    result = await reader.call_tool("describe_table", {"table": "invoices"})
    assert result.is_error and "the tables are: customers, orders, products" in text(result)


async def test_a_huge_result_is_capped_and_a_slow_one_cancelled(reader, demo, pristine):
    started = time.monotonic()
    capped = await reader.call_tool("query", {"sql": "SELECT generate_series(1, 100000000) AS n"})
    assert text(capped).endswith("showing the first 200 rows only (row cap 200); the query has more rows")
    # Rows of a million characters: fetching stops at the 16 MiB result size limit, not at 200 rows.
    wide = await reader.call_tool(
        "query", {"sql": "SELECT n, repeat('x', 1000000) AS x FROM generate_series(1, 200) n"}
    )
    assert text(wide).endswith("showing the first 16 rows only (result size limit 16 MiB); the query has more rows")
    assert len(text(wide).split("\n")) == 2 + 16 + 2
    slow = await reader.call_tool("query", {"sql": "SELECT pg_sleep(30)"})
    assert slow.is_error and "canceling statement due to statement timeout (time limit 5000 ms)" in text(slow)
    assert time.monotonic() - started < 25  # the slow one cancelled at 5 s, not after its 30
    assert fingerprint(demo.admin) == pristine


# (sql, the database's message, what refuses it): "protocol" = the extended query protocol's one
# statement; "read-only" = the READ ONLY transaction; "block" = commands that cannot run in any
# transaction; "role" = the role's missing privilege; "no rows" = runs, returns no result set, and is
# rolled back.
CASES = [
    ("COMMIT; DROP TABLE orders", "cannot insert multiple commands into a prepared statement", "protocol"),
    ("BEGIN; DELETE FROM orders", "cannot insert multiple commands into a prepared statement", "protocol"),
    ("SELECT 1; DELETE FROM orders", "cannot insert multiple commands into a prepared statement", "protocol"),
    ("; DELETE FROM orders", "cannot execute DELETE in a read-only transaction", "read-only"),
    ("/* x */ DELETE FROM orders", "cannot execute DELETE in a read-only transaction", "read-only"),
    ("-- x\nDELETE FROM orders", "cannot execute DELETE in a read-only transaction", "read-only"),
    ("WITH d AS (DELETE FROM orders RETURNING *) SELECT * FROM d", "in a read-only transaction", "read-only"),
    ("INSERT INTO products VALUES (99, 'x', 'y', 1)", "cannot execute INSERT in a read-only transaction", "read-only"),
    ("UPDATE products SET price = 0", "cannot execute UPDATE in a read-only transaction", "read-only"),
    ("DROP TABLE orders", "cannot execute DROP TABLE in a read-only transaction", "read-only"),
    ("TRUNCATE orders", "cannot execute TRUNCATE TABLE in a read-only transaction", "read-only"),
    ("CREATE TEMP TABLE t (x int)", "cannot execute CREATE TABLE in a read-only transaction", "read-only"),
    ("SET TRANSACTION READ WRITE", "transaction read-write mode must be set before any query", "read-only"),
    ("DO $$ BEGIN DELETE FROM orders; END $$", "cannot execute DELETE in a read-only transaction", "read-only"),
    ("CALL purge_orders()", "cannot execute DELETE in a read-only transaction", "read-only"),
    ("SELECT purge_orders_as_owner()", "cannot execute DELETE in a read-only transaction", "read-only"),
    ("SELECT nextval('invoice_numbers')", "cannot execute nextval() in a read-only transaction", "read-only"),
    ("SELECT setval('invoice_numbers', 99)", "cannot execute setval() in a read-only transaction", "read-only"),
    ("GRANT SELECT ON orders TO PUBLIC", "cannot execute GRANT in a read-only transaction", "read-only"),
    ("CREATE ROLE intruder SUPERUSER", "cannot execute CREATE ROLE in a read-only transaction", "read-only"),
    ("EXPLAIN ANALYZE DELETE FROM orders", "cannot execute DELETE in a read-only transaction", "read-only"),
    ("SELECT id FROM orders FOR UPDATE", "cannot execute SELECT FOR UPDATE in a read-only transaction", "read-only"),
    ("VACUUM", "VACUUM cannot run inside a transaction block", "block"),
    ("ALTER SYSTEM SET work_mem = '1GB'", "ALTER SYSTEM cannot run inside a transaction block", "block"),
    ("CREATE DATABASE intruder", "cannot execute CREATE DATABASE in a read-only transaction", "read-only"),
    (f"COPY (SELECT 1) TO PROGRAM 'touch {PWNED}'", "pg_execute_server_program", "role"),
    ("COPY orders TO '/tmp/aptix-orders.csv'", "pg_write_server_files", "role"),
    ("SELECT pg_read_file('/etc/passwd')", "permission denied for function pg_read_file", "role"),
    ("SELECT lo_import('/etc/passwd')", "permission denied for function lo_import", "role"),
    ("SELECT pg_reload_conf()", "permission denied for function pg_reload_conf", "role"),
    ("SELECT pg_terminate_backend({admin_pid})", "terminate", "role"),
    ("SET ROLE {superuser}", "permission denied to set role", "role"),
    ("SET SESSION AUTHORIZATION {superuser}", "permission denied to set session authorization", "role"),
    ("CHECKPOINT", "pg_checkpoint", "role"),
    ("LOCK TABLE orders IN ACCESS EXCLUSIVE MODE", "permission denied for table orders", "role"),
    ("COMMIT", "the statement returned no result set", "no rows"),
    ("ROLLBACK", "the statement returned no result set", "no rows"),
    ("LISTEN aptix", "the statement returned no result set", "no rows"),
    ("NOTIFY aptix, 'hello'", "the statement returned no result set", "no rows"),
    ("PREPARE wipe AS DELETE FROM orders", "the statement returned no result set", "no rows"),
    ("COPY orders TO STDOUT", "the statement returned no result set", "no rows"),
]
AS_WRITER = [case for case in CASES if case[2] != "role"]


def _ids(cases):
    # The random file name stays out of the id: pytest-xdist's workers must collect the same ids.
    return [sql.replace(str(PWNED), "/tmp/aptix-pwned-…").splitlines()[0][:60] for sql, _, _ in cases]


async def _assert_refused(session, demo, pristine, sql_text: str, message: str) -> None:
    sql_text = sql_text.format(admin_pid=demo.admin.info.backend_pid, superuser=demo.superuser)
    result = await session.call_tool("query", {"sql": sql_text})
    assert result.is_error
    assert message in text(result)
    assert fingerprint(demo.admin) == pristine
    assert not PWNED.exists()


@pytest.mark.parametrize(("sql_text", "message", "mechanism"), CASES, ids=_ids(CASES))
async def test_refused_for_the_reader(reader, demo, pristine, sql_text, message, mechanism):
    await _assert_refused(reader, demo, pristine, sql_text, message)


@pytest.mark.parametrize(("sql_text", "message", "mechanism"), AS_WRITER, ids=_ids(AS_WRITER))
async def test_refused_even_for_a_role_that_may_write(writer, demo, pristine, sql_text, message, mechanism):
    await _assert_refused(writer, demo, pristine, sql_text, message)


@pytest.mark.parametrize(
    "sql_text", ["COMMIT; DROP TABLE orders", "ANALYZE DELETE FROM orders", "(ANALYZE) DELETE FROM orders"]
)
async def test_explain_never_runs_the_statement(writer, demo, pristine, sql_text):
    result = await writer.call_tool("explain", {"sql": sql_text})
    assert result.is_error
    assert fingerprint(demo.admin) == pristine


async def test_nothing_carries_over_to_the_next_call(reader, demo, pristine):
    """Session settings, prepared statements and advisory locks end with the call."""

    async def query(sql_text: str):
        return await reader.call_tool("query", {"sql": sql_text})

    assert "| off |" in text(await query("SELECT set_config('default_transaction_read_only', 'off', false)"))
    assert "read-only transaction" in text(await query("DELETE FROM orders"))
    assert "| 0 |" in text(await query("SELECT set_config('statement_timeout', '0', false)"))
    assert "statement timeout" in text(await query("SELECT pg_sleep(10)"))
    await query("PREPARE wipe AS SELECT 1")
    assert 'prepared statement "wipe" does not exist' in text(await query("EXECUTE wipe"))
    assert not (await query("SELECT pg_advisory_lock(42)")).is_error
    assert demo.admin.execute("SELECT pg_try_advisory_lock(42)").fetchone()[0]  # released with the call
    demo.admin.execute("SELECT pg_advisory_unlock(42)")
    assert fingerprint(demo.admin) == pristine


async def test_the_connection_recovers_after_a_copy(reader):
    assert (await reader.call_tool("query", {"sql": "COPY orders TO STDOUT"})).is_error
    assert text(await reader.call_tool("query", {"sql": "SELECT 1 AS a, 2 AS b"})).endswith("1 row")
