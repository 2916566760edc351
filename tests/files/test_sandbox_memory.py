"""A query's result stays inside DuckDB's memory limit: only the rows shown come out into the serving
process, and the rest are counted inside DuckDB. A wide result (100,000 rows of 100 kB) once took a
process from 305 MB to 2.9 GB against a 512 MB limit, its rows pulled into Python only to be counted.
Measured in a process of its own, whose peak resident memory is the query's alone."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LIMIT_MB = 256

MEASURE = """
import json, os, resource, django
django.setup()
from files.sandbox import run_query
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
result = run_query([], "SELECT repeat('x', 100000) AS wide FROM range(100000)", max_rows=5)
grown = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) // 1024
print(json.dumps({"total": result.total, "rows": len(result.rows), "width": len(result.rows[0][0]), "grown_mb": grown}))
"""


def test_a_wide_result_is_counted_inside_the_memory_limit():
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "aptix.settings",
        "APTIX_FILES_QUERY_MEMORY_MB": str(LIMIT_MB),
        "DATABASE_URL": "",
    }
    done = subprocess.run(
        [sys.executable, "-c", MEASURE], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=True
    )
    measured = json.loads(done.stdout.strip().splitlines()[-1])
    assert (measured["total"], measured["rows"], measured["width"]) == (100_000, 5, 100_000)
    assert measured["grown_mb"] < LIMIT_MB, measured


def test_a_statement_runs_as_a_subquery_whatever_follows_it(settings):
    from files.sandbox import run_query

    for sql in ("SELECT 1 AS n;", "SELECT 1 AS n -- why", "SELECT 1 AS n /* ; */ ; -- a ; after", "SELECT ';' AS n;"):
        result = run_query([], sql, max_rows=5)
        assert result.columns == ["n"] and result.total == 1 and len(result.rows) == 1, sql
    ordered = run_query([], "SELECT x FROM range(100000) t(x) ORDER BY x DESC;", max_rows=3)
    assert (ordered.rows, ordered.total) == ([(99_999,), (99_998,), (99_997,)], 100_000)


def test_duckdbs_own_catalog_and_settings_are_out_of_reach():
    """They named the attached files' paths on the server (pragma_database_list, duckdb_settings())."""
    import pytest

    from files.sandbox import QueryRefused, run_query

    for sql in (
        "SELECT * FROM pragma_database_list",
        'SELECT path FROM "duckdb_databases"()',
        "SELECT * FROM duckdb_settings()",
        "SELECT value FROM main.Duckdb_Settings() WHERE name = 'temp_directory'",
        "SELECT current_setting('temp_directory')",
    ):
        with pytest.raises(QueryRefused, match="DuckDB's own catalog or settings"):
            run_query([], sql, max_rows=5)
    assert run_query([], "SELECT 'duckdb_settings' AS words", max_rows=1).rows == [("duckdb_settings",)]
