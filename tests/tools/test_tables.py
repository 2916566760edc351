"""The tools' table format (tools/tables.py): what markdown_table writes, parse_markdown_table reads back."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tools.tables import markdown_table, parse_markdown_table


def test_a_table_round_trips():
    text = markdown_table(["name", "note", "n"], [["a|b", "one\ntwo", 1], ["c", None, 2.5], [True, "", 0]])
    assert parse_markdown_table(text) == (
        ["name", "note", "n"],
        [
            ["a|b", "one\\ntwo", "1"],  # the pipe comes back; the newline stays written as \n, one row one line
            ["c", "NULL", "2.5"],
            ["true", "", "0"],
        ],
    )


def test_the_footer_line_under_a_table_is_allowed():
    text = markdown_table(["month", "revenue"], [["2025-01", 10], ["2025-02", 12]]) + "\n\n2 rows"
    assert parse_markdown_table(text) == (["month", "revenue"], [["2025-01", "10"], ["2025-02", "12"]])


def test_max_rows_shows_that_many_and_says_how_many_more():
    rows = [[n, n * n] for n in range(15)]
    text = markdown_table(["n", "square"], rows, max_rows=12)
    lines = text.split("\n")
    assert lines[:3] == ["| n | square |", "|---|---|", "| 0 | 0 |"]
    assert lines[13] == "| 11 | 121 |"
    assert lines[14:] == ["", "…and 3 more rows."]
    assert markdown_table(["n", "square"], rows[:12], max_rows=12) == "\n".join(lines[:14])
    assert "more rows" not in markdown_table(["n", "square"], rows)


def test_text_that_is_not_a_table_is_none():
    assert parse_markdown_table("The revenue peaked in December.") is None
    assert parse_markdown_table("a, b\n1, 2\n3, 4") is None
    assert parse_markdown_table("| only one column |\n|---|\n| x |") is None
    assert parse_markdown_table("one | two\nthree\nfour\nfive\nsix") is None


def test_tables_needs_no_django():
    """The SQL MCP server imports tools.tables in its own process, which has no Django."""
    code = "import sys, tools.tables, tools.sql_mcp.server; sys.exit('django' in sys.modules)"
    root = Path(__file__).resolve().parents[2]
    assert subprocess.run([sys.executable, "-c", code], cwd=root, check=False).returncode == 0
