"""The demo dataset and `manage.py demo_data`: built once, atomically, with the data the offline
model's SQL expects."""

from __future__ import annotations

import shutil
import sqlite3

import pytest
from django.core.management import call_command

from agents.llm.offline.data import REVENUE_BY_MONTH_SQL, sql_for
from tools import demo_data
from tools.demo_data import build_demo_database, default_path, is_current

QUESTIONS = [
    "revenue by month",
    "orders by country",
    "revenue by category",
    "customers by segment",
    "new customers per month",
    "top customers",
    "top products",
    "average order value",
    "how many orders per month",
]


@pytest.fixture
def demo_db(tmp_path):
    path = tmp_path / "demo.sqlite3"
    build_demo_database(path)
    return path


def _rows(path, sql, *params):
    conn = sqlite3.connect(path)
    try:
        return conn.execute(sql, params).fetchall()
    finally:
        conn.close()


def test_the_command_builds_once_then_leaves_the_file_alone(tmp_path, capsys):
    path = tmp_path / "var" / "demo.sqlite3"
    call_command("demo_data", path=path)
    assert capsys.readouterr().out == f"Created the demo database at {path}.\n"
    before = path.stat()
    call_command("demo_data", path=path)
    assert capsys.readouterr().out == f"The demo database at {path} is up to date.\n"
    after = path.stat()
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)
    assert [p.name for p in path.parent.iterdir()] == ["demo.sqlite3"]


def test_the_default_path_and_its_override(tmp_path, monkeypatch, settings, capsys):
    monkeypatch.delenv("APTIX_DEMO_DB", raising=False)
    assert default_path() == settings.BASE_DIR / "var" / "demo.sqlite3"
    monkeypatch.setenv("APTIX_DEMO_DB", str(tmp_path / "elsewhere.sqlite3"))
    call_command("demo_data")
    assert is_current(tmp_path / "elsewhere.sqlite3")


def test_the_data(demo_db):
    (customers,), (products,), (orders,) = (
        _rows(demo_db, f"SELECT count(*) FROM {t}")[0] for t in ("customers", "products", "orders")
    )
    assert (customers, products) == (60, 20) and 1500 <= orders <= 2500
    months = _rows(demo_db, REVENUE_BY_MONTH_SQL)
    assert [month for month, _ in months] == [f"2025-{m:02d}" for m in range(1, 13)]
    assert _rows(
        demo_db,
        "SELECT typeof(quantity), typeof(unit_price), typeof(price) FROM orders "
        "JOIN products p ON p.id = product_id GROUP BY 1, 2, 3",
    ) == [("integer", "real", "real")]
    orphans = _rows(
        demo_db,
        "SELECT count(*) FROM orders o LEFT JOIN customers c ON c.id = o.customer_id "
        "LEFT JOIN products p ON p.id = o.product_id WHERE c.id IS NULL OR p.id IS NULL "
        "OR o.ordered_at < c.created_at",
    )
    assert orphans == [(0,)]


@pytest.mark.parametrize("question", QUESTIONS)
def test_every_offline_model_query_has_an_answer(demo_db, question):
    assert len(_rows(demo_db, sql_for(question))) >= 2


def test_a_stale_or_foreign_file_is_rebuilt(tmp_path):
    path = tmp_path / "demo.sqlite3"
    path.write_bytes(b"not a database")
    assert build_demo_database(path) and is_current(path)
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA user_version = 1")  # built from another version of the dataset
    conn.close()
    assert not is_current(path)
    assert build_demo_database(path) and is_current(path)


def test_a_failed_build_keeps_the_old_file_and_leaves_no_temporary_file(tmp_path, monkeypatch):
    data = tmp_path / "data"
    shutil.copytree(demo_data.DATA_DIR, data, ignore=shutil.ignore_patterns("*.py"))
    with open(data / "orders.csv", "a", encoding="utf-8") as f:
        f.write("9999,1,1\n")  # a row with too few columns, after the customers and products went in
    monkeypatch.setattr(demo_data, "DATA_DIR", data)
    target = tmp_path / "out"
    target.mkdir()
    (target / "demo.sqlite3").write_bytes(b"the previous database")
    with pytest.raises(sqlite3.ProgrammingError):
        build_demo_database(target / "demo.sqlite3")
    assert (target / "demo.sqlite3").read_bytes() == b"the previous database"
    assert [p.name for p in target.iterdir()] == ["demo.sqlite3"]
