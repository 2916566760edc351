"""The text form of a table that tools hand the model: written by the SQL server, read back by the
offline model. This module is the single owner of that format:

    | a | b |
    |---|---|
    | 1 | x\\|y |

one row per line; a cell is one line (a newline inside a value is written as the two characters
`\\n`), a pipe inside a cell is escaped as `\\|`, NULL is written `NULL` and a long value is cut to
MAX_CELL_CHARS. `markdown_table` writes it, `parse_markdown_table` reads it back.

No Django here: the SQL MCP server (tools/sql_mcp) imports this module in its own process.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

MAX_CELL_CHARS = 200
_CELL_SEPARATOR = re.compile(r"(?<!\\)\|")  # a pipe, unless escaped as \| inside a cell
_RULE = re.compile(r"[\s|:\-+]+")  # the |---|---| line under the header


def cell(value: Any) -> str:
    """One value as a markdown table cell: one line, pipes escaped, at most MAX_CELL_CHARS."""
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        text = "true" if value else "false"
    elif isinstance(value, (bytes, bytearray, memoryview)):
        text = "\\x" + bytes(value[:MAX_CELL_CHARS]).hex()
    elif isinstance(value, (dict, list)):
        text = json.dumps(value, default=str, ensure_ascii=False)
    else:
        text = str(value)
    if len(text) > MAX_CELL_CHARS:
        text = text[: MAX_CELL_CHARS - 1] + "…"
    return text.replace("\r\n", "\n").replace("\r", "\n").replace("\n", "\\n").replace("|", "\\|")


def markdown_table(columns: Sequence[Any], rows: Sequence[Sequence[Any]], *, max_rows: int | None = None) -> str:
    """The table as markdown; with `max_rows`, only that many rows and then a line saying how many more."""
    shown = rows if max_rows is None else rows[:max_rows]
    lines = ["| " + " | ".join(cell(c) for c in columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in shown]
    if len(rows) > len(shown):
        lines.append(f"\n…and {len(rows) - len(shown)} more rows.")
    return "\n".join(lines)


def parse_markdown_table(text: str) -> tuple[list[str], list[list[str]]] | None:
    """(columns, rows) of a markdown table, `\\|` read back as a pipe; None when the text is not one.
    A few lines that are not table rows (such as the "12 rows" footer) are allowed."""
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    piped = [line for line in lines if "|" in line]
    if len(piped) < 2 or len(piped) < len(lines) - 2:
        return None
    cells = [
        [c.strip().replace("\\|", "|") for c in _CELL_SEPARATOR.split(line.strip("|"))]
        for line in piped
        if not _RULE.fullmatch(line)
    ]
    width = len(cells[0])
    if width >= 2 and all(len(row) == width for row in cells[1:]):
        return cells[0], cells[1:]
    return None
