"""The demo dataset (aptix/demo_data/*.csv) as a SQLite file for the `sql` MCP server, or loaded into
a PostgreSQL database.

    customers(id INTEGER PK, name TEXT, country TEXT, segment TEXT, created_at TEXT 'YYYY-MM-DD')
    products(id INTEGER PK, name TEXT, category TEXT, price REAL)
    orders(id INTEGER PK, customer_id → customers, product_id → products, quantity INTEGER,
           unit_price REAL, ordered_at TEXT 'YYYY-MM-DD')

No Django here: the management command, the tests and benchmarks all call these functions.
"""

from __future__ import annotations

import contextlib
import csv
import hashlib
import os
import sqlite3
import tempfile
from pathlib import Path
from typing import Any

from aptix.env import APTIX_DEMO_DB

REPO_DIR = Path(__file__).resolve().parent.parent
DATA_DIR = REPO_DIR / "aptix" / "demo_data"
TABLES = ("customers", "products", "orders")  # load order: parents first

SQLITE_SCHEMA = """
CREATE TABLE customers (
    id INTEGER PRIMARY KEY, name TEXT NOT NULL, country TEXT NOT NULL, segment TEXT NOT NULL,
    created_at TEXT NOT NULL);
CREATE TABLE products (
    id INTEGER PRIMARY KEY, name TEXT NOT NULL, category TEXT NOT NULL, price REAL NOT NULL);
CREATE TABLE orders (
    id INTEGER PRIMARY KEY, customer_id INTEGER NOT NULL REFERENCES customers (id),
    product_id INTEGER NOT NULL REFERENCES products (id), quantity INTEGER NOT NULL,
    unit_price REAL NOT NULL, ordered_at TEXT NOT NULL);
CREATE INDEX orders_customer_id ON orders (customer_id);
CREATE INDEX orders_product_id ON orders (product_id);
CREATE INDEX orders_ordered_at ON orders (ordered_at);
"""

# PostgreSQL spelling of the same tables: NUMERIC money (PostgreSQL has no ROUND(double, int)) and
# DATE days, so natural PostgreSQL queries work.
POSTGRES_SCHEMA = """
CREATE TABLE customers (
    id integer PRIMARY KEY, name text NOT NULL, country text NOT NULL, segment text NOT NULL,
    created_at date NOT NULL);
CREATE TABLE products (
    id integer PRIMARY KEY, name text NOT NULL, category text NOT NULL, price numeric(10, 2) NOT NULL);
CREATE TABLE orders (
    id integer PRIMARY KEY, customer_id integer NOT NULL REFERENCES customers (id),
    product_id integer NOT NULL REFERENCES products (id), quantity integer NOT NULL,
    unit_price numeric(10, 2) NOT NULL, ordered_at date NOT NULL);
CREATE INDEX orders_customer_id ON orders (customer_id);
CREATE INDEX orders_product_id ON orders (product_id);
CREATE INDEX orders_ordered_at ON orders (ordered_at);
"""


def default_path() -> Path:
    """$APTIX_DEMO_DB, else var/demo.sqlite3 in the repository (where mcp.json's `sql` entry looks)."""
    return Path(APTIX_DEMO_DB.read() or REPO_DIR / "var" / "demo.sqlite3")


def dataset_version() -> int:
    """A fingerprint of the CSVs and the schema, stored as the SQLite file's `user_version`: a file
    built from other data (or by another version of this code) is rebuilt."""
    digest = hashlib.sha256(SQLITE_SCHEMA.encode())
    for table in TABLES:
        digest.update((DATA_DIR / f"{table}.csv").read_bytes())
    return int(digest.hexdigest()[:7], 16)  # 28 bits: user_version is a signed 32-bit integer


def read_rows(table: str) -> tuple[list[str], list[list[str]]]:
    """(header, rows) of one table's CSV, values as text."""
    with open(DATA_DIR / f"{table}.csv", newline="", encoding="utf-8") as f:
        header, *rows = list(csv.reader(f))
    return header, rows


def is_current(path: str | os.PathLike) -> bool:
    """Whether `path` is a demo database built from the current dataset."""
    try:
        conn = sqlite3.connect(Path(path).resolve().as_uri() + "?mode=ro", uri=True)
    except sqlite3.Error:
        return False
    try:
        return conn.execute("PRAGMA user_version").fetchone()[0] == dataset_version()
    except sqlite3.DatabaseError:  # not a SQLite file
        return False
    finally:
        conn.close()


def build_demo_database(path: str | os.PathLike) -> bool:
    """Create the SQLite demo database at `path` unless it is already current.

    Returns True when it was (re)built. The file is written under a temporary name in the same
    directory and renamed into place, so readers never see a half-written database.
    """
    path = Path(path)
    if is_current(path):
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    try:
        _fill_sqlite(tmp)
        os.chmod(tmp, 0o644)  # mkstemp makes it private; a database sqlite3 creates is not
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    return True


def _fill_sqlite(filename: str) -> None:
    conn = sqlite3.connect(filename, isolation_level=None)
    try:
        conn.executescript(SQLITE_SCHEMA)
        conn.execute("BEGIN")
        for table in TABLES:
            header, rows = read_rows(table)
            # Column affinity turns the CSV's text into INTEGER and REAL values.
            placeholders = ", ".join("?" * len(header))
            conn.executemany(f"INSERT INTO {table} ({', '.join(header)}) VALUES ({placeholders})", rows)
        conn.execute(f"PRAGMA user_version = {dataset_version()}")
        conn.execute("COMMIT")
    finally:
        conn.close()


def load_demo_postgres(conn: Any) -> None:
    """Create and fill the demo tables in the current schema of a psycopg 3 connection.

    Runs in one transaction, committed here, that ends with ANALYZE so the planner's row
    estimates (which `list_tables` shows) are filled in.
    """
    with conn.transaction():
        conn.execute(POSTGRES_SCHEMA)
        for table in TABLES:
            header, rows = read_rows(table)
            with conn.cursor().copy(f"COPY {table} ({', '.join(header)}) FROM STDIN") as copy:
                for row in rows:
                    copy.write_row(row)
        conn.execute("ANALYZE " + ", ".join(TABLES))
