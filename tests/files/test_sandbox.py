"""Model-written SQL over uploaded tables runs in a sandbox: one read-only SELECT, no file system,
network, extensions or settings, and interrupted at the time limit."""

from __future__ import annotations

import time

import pytest
from asgiref.sync import async_to_sync

from files.sandbox import QueryRefused, run_query, sandbox_connection, session_tables
from files.services import file_upload, session_files
from tests.helpers.files import csv_plain, uploaded, xlsx_two_sheets

pytestmark = pytest.mark.django_db


@pytest.fixture
def tables(alice, make_session):
    session = async_to_sync(make_session)()
    file_upload(owner=alice, uploaded=uploaded("sales.csv", csv_plain()), session=session)
    file_upload(owner=alice, uploaded=uploaded("plan.xlsx", xlsx_two_sheets()), session=session)
    return session_tables(session_files(session.pk))


def test_a_select_over_the_sessions_tables(tables):
    assert [t[0] for t in tables] == ["sales", "plan_sales", "plan_targets"]
    result = run_query(
        tables,
        "WITH r AS (SELECT region, sum(sales) AS total FROM sales GROUP BY region) "
        "SELECT r.region, total, target FROM r JOIN plan_targets USING (region) ORDER BY total DESC",
        max_rows=10,
    )
    assert result.columns == ["region", "total", "target"]
    assert result.rows == [("South", 410.0, 400), ("North", 250.5, 300)] and result.total == 2


def test_a_table_that_is_not_there_is_named_with_the_ones_that_are(tables):
    """A small model guessed "invoices" and, told only that it does not exist, gave up: the error now
    lists the tables it can query."""
    with pytest.raises(QueryRefused) as refused:
        run_query(tables, "SELECT sum(revenue) FROM invoices", max_rows=10)
    assert str(refused.value).startswith("The query failed: Catalog Error: Table with name invoices does not exist")
    assert str(refused.value).endswith("The tables are: sales, plan_sales, plan_targets.")


def test_rows_are_capped_and_all_counted(tables):
    result = run_query(tables, "SELECT * FROM range(25000)", max_rows=3)
    assert len(result.rows) == 3 and result.total == 25000 and not result.more


@pytest.mark.parametrize(
    ("sql", "says"),
    [
        ("SELECT * FROM read_csv('/etc/passwd')", "out of reach"),
        ("SELECT * FROM read_text('/etc/passwd')", "out of reach"),
        ("SELECT * FROM glob('/*')", "out of reach"),
        ("COPY (SELECT * FROM sales) TO '/tmp/stolen.csv'", "COPY statement"),
        ("ATTACH '/tmp/other.duckdb' AS other", "ATTACH statement"),
        ("INSTALL httpfs", "LOAD statement"),
        ("LOAD httpfs", "LOAD statement"),
        ("SET threads = 64", "SET statement"),
        ("RESET memory_limit", "SET statement"),
        ("PRAGMA database_list", "PRAGMA statement"),
        ("CREATE TABLE t AS SELECT 1", "CREATE statement"),
        ("DROP VIEW sales", "DROP statement"),
        ("INSERT INTO sales VALUES ('West', 'Q1', 1)", "INSERT statement"),
        ("SELECT 1; DROP VIEW sales", "has 2"),
        ("SELECT * FROM query('COPY (SELECT 1) TO ''/tmp/q.csv''')", "failed"),
        ("", "one SELECT"),
    ],
)
def test_escapes_are_refused_with_a_clear_error(tables, sql, says):
    with pytest.raises(QueryRefused) as refused:
        run_query(tables, sql, max_rows=10)
    assert says in str(refused.value)
    assert run_query(tables, "SELECT count(*) FROM sales", max_rows=1).rows == [(6,)]  # nothing changed


def test_settings_stay_locked_inside_a_select(tables):
    connection = sandbox_connection(tables)
    try:
        locked = "SELECT current_setting('enable_external_access'), current_setting('threads')"
        assert connection.execute(locked).fetchall() == [(False, 2)]
    finally:
        connection.close()
    with pytest.raises(QueryRefused, match="DuckDB's own catalog or settings"):  # and the model reads none
        run_query(tables, "SELECT current_setting('threads')", max_rows=1)


def test_a_runaway_query_is_interrupted_at_the_timeout(tables, settings):
    settings.APTIX_FILES_QUERY_TIMEOUT = 0.3
    started = time.monotonic()
    with pytest.raises(QueryRefused) as refused:
        run_query(tables, "SELECT count(*) FROM range(1000000000000) a, sales", max_rows=1)
    assert time.monotonic() - started < 3
    assert "time limit of 0.3 s" in str(refused.value)
