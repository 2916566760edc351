"""Starting the SQL MCP server: clear errors for bad URLs, files and settings, and a light process."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.tools.sql_mcp.helpers import REPO_DIR
from tools.sql_mcp import server as sql_server

pytestmark = pytest.mark.slow  # real subprocesses (servers, workers, web processes)


def _python(*args: str) -> subprocess.CompletedProcess:
    env = {"PATH": os.environ["PATH"], "PYTHONPATH": str(REPO_DIR)}  # no Django settings, no DATABASE_URL
    return subprocess.run(
        [sys.executable, *args], cwd=REPO_DIR, env=env, capture_output=True, text=True, timeout=60, check=False
    )


def test_a_missing_file_stops_the_server_instead_of_creating_it(tmp_path):
    missing = tmp_path / "nope.sqlite3"
    done = _python("-m", "tools.mcp.sql_server", f"sqlite:///{missing}")
    assert done.returncode == 1
    assert done.stderr == f"sql_server: SQLite database file not found: {missing}\n"
    assert not missing.exists()


@pytest.mark.parametrize("module", ["tools.mcp.sql_server", "tools.sql_mcp"])
def test_the_mcp_json_command_and_the_package_run_the_same_server(module, tmp_path):
    missing = tmp_path / "nope.sqlite3"
    done = _python("-m", module, f"sqlite:///{missing}")
    assert (done.returncode, done.stdout, done.stderr) == (
        1,
        "",
        f"sql_server: SQLite database file not found: {missing}\n",
    )
    done = _python("-m", module)
    assert (done.returncode, done.stdout, done.stderr) == (2, "", sql_server.USAGE + "\n")


def test_the_server_imports_neither_django_nor_an_unused_driver():
    done = _python(
        "-c",
        "import sys, tools.mcp.sql_server; "
        "sqlite = {m.split('.')[0] for m in sys.modules} & {'django', 'psycopg'}; "
        "import tools.sql_mcp.postgres; "
        "postgres = {m.split('.')[0] for m in sys.modules} & {'django', 'psycopg'}; "
        "print(sorted(sqlite), sorted(postgres))",
    )
    assert done.stdout == "[] ['psycopg']\n", done.stderr


def test_a_relative_path_is_relative_to_the_working_directory(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert sql_server.main(["sqlite:///var/demo.sqlite3"]) == 1
    assert capsys.readouterr().err == f"sql_server: SQLite database file not found: {tmp_path}/var/demo.sqlite3\n"


@pytest.mark.parametrize(
    ("argv", "status", "message"),
    [
        ([], 2, "usage: python -m tools.mcp.sql_server <sqlite:///path/to/file.sqlite3 | postgresql://user@host/db>"),
        (
            ["mysql://root:secret@localhost/shop"],
            1,
            (
                "sql_server: unsupported database URL scheme 'mysql': use "
                "sqlite:///path/to/file.sqlite3 or postgresql://user@host/dbname"
            ),
        ),
        (["host=db password=secret"], 1, "sql_server: unsupported database URL (not a URL)"),
        (
            ["sqlite://var/demo.sqlite3"],
            1,
            ("sql_server: a SQLite URL is sqlite:///relative/path (three slashes) or sqlite:////absolute/path (four)"),
        ),
    ],
)
def test_bad_arguments(argv, status, message, capsys):
    assert sql_server.main(argv) == status
    err = capsys.readouterr().err
    assert err.startswith(message) and "secret" not in err


def test_an_unreachable_postgresql_server(capsys):
    assert sql_server.main(["postgresql://reader:secret@127.0.0.1:1/shop"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("sql_server: cannot connect to PostgreSQL: ") and "secret" not in err


def test_a_file_that_is_not_a_database(tmp_path, capsys):
    notes = tmp_path / "notes.sqlite3"
    notes.write_text("hello")
    assert sql_server.main([f"sqlite:///{notes}"]) == 1
    assert capsys.readouterr().err == f"sql_server: cannot open SQLite database {notes}: file is not a database\n"
    assert notes.read_text() == "hello"


@pytest.mark.parametrize("value", ["lots", "0", "-5"])
def test_bad_limits(value, monkeypatch, tmp_path, capsys):
    monkeypatch.setenv("APTIX_SQL_MAX_ROWS", value)
    assert sql_server.main([f"sqlite:///{tmp_path}/any.sqlite3"]) == 1
    assert capsys.readouterr().err == f"sql_server: APTIX_SQL_MAX_ROWS must be a positive integer, not {value!r}\n"


@pytest.mark.parametrize("name", ["APTIX_SQL_TIMEOUT_MS", "APTIX_SQL_MAX_BYTES", "APTIX_SQL_MEMORY_MB"])
def test_every_limit_is_checked(name, monkeypatch, tmp_path, capsys):
    monkeypatch.setenv(name, "0")
    assert sql_server.main([f"sqlite:///{tmp_path}/any.sqlite3"]) == 1
    assert capsys.readouterr().err == f"sql_server: {name} must be a positive integer, not '0'\n"


def test_too_little_memory_for_the_server_itself(monkeypatch, tmp_path, capsys):
    monkeypatch.setenv("APTIX_SQL_MEMORY_MB", "64")
    assert sql_server.main([f"sqlite:///{tmp_path}/any.sqlite3"]) == 1
    assert capsys.readouterr().err == "sql_server: APTIX_SQL_MEMORY_MB must be at least 128 (MiB), not 64\n"
