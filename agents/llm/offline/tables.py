"""Tables in tool results, for the offline model: read a result as a table (JSON rows, a markdown
table, CSV or MCP text content) and turn a small one into chart arguments or back into markdown;
also the label/number pairs of a chart the user asks for in their message (rule e). The markdown
table format itself (writing and reading) belongs to tools/tables.py."""

from __future__ import annotations

import csv
import io
import re
from typing import Any

from tools import tables
from tools.tables import parse_markdown_table

from .text import parse_json, shorten

MAX_CHART_POINTS = 50  # image_gen's own limit
MAX_TABLE_ROWS_SHOWN = 12
_NUMBER = re.compile(r"^-?(\d+|\d{1,3}(,\d{3})+)(\.\d+)?$")


def number(text: str) -> float | int:
    value = float(text.replace(",", ""))
    return int(value) if value.is_integer() and abs(value) < 2**53 else value


def parse_table(text: str) -> Table | None:
    """(columns, rows) from JSON rows, a markdown table or CSV; None when the text is not a table."""
    data = parse_json(text)
    if data is not None:
        return _table_from_json(data)
    table = parse_markdown_table(text)
    if table is not None:
        return table
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    if len(lines) >= 2 and "," in lines[0]:
        rows = list(csv.reader(io.StringIO("\n".join(lines))))
        if len(rows[0]) >= 2 and all(len(r) == len(rows[0]) for r in rows):
            return rows[0], rows[1:]
    return None


Table = tuple[list[str], list[list[Any]]]  # (columns, rows)


def _table_from_json(data: Any, depth: int = 0) -> Table | None:
    if depth > 2:
        return None
    if isinstance(data, list) and data:
        return _table_from_list(data)
    if isinstance(data, dict):
        return _table_from_dict(data, depth)
    return None


def _table_from_list(data: list) -> Table | None:
    if all(isinstance(x, dict) and x.get("type") == "text" for x in data):
        return parse_table("".join(str(x.get("text", "")) for x in data))  # MCP content parts
    if all(isinstance(x, dict) for x in data):
        columns = list(data[0])
        return columns, [[row.get(c) for c in columns] for row in data]
    if all(isinstance(x, str) for x in data):
        return ["name"], [[x] for x in data]
    return None


def _table_from_dict(data: dict, depth: int) -> Table | None:
    rows = data.get("rows") if "rows" in data else data.get("data")
    columns = data.get("columns")
    if (
        isinstance(columns, list)
        and isinstance(rows, list)
        and rows
        and all(isinstance(r, (list, tuple)) for r in rows)
    ):
        names = [str(c.get("name")) if isinstance(c, dict) else str(c) for c in columns]
        return names, [list(r) for r in rows]
    for key in ("rows", "data", "result", "results", "tables"):
        if key in data:
            return _table_from_json(data[key], depth + 1)
    return None


def _asnumber(value: Any) -> float | int | None:
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (int, float)):
        return value
    if isinstance(value, str) and _NUMBER.match(value.strip()):
        return number(value.strip())
    return None


def chart_of(text: str) -> tuple[list[str], list, str, str] | None:
    """(labels, values, label column, value column) when the text is a small chartable table."""
    table = parse_table(text)
    if table is None:
        return None
    columns, rows = table
    if not 2 <= len(rows) <= MAX_CHART_POINTS or len(columns) < 2:
        return None
    numeric = [i for i in range(len(columns)) if all(_asnumber(r[i]) is not None for r in rows)]
    label = next((i for i in range(len(columns)) if i not in numeric), 0)
    values = [i for i in numeric if i != label]
    if not values:
        return None
    value = values[-1]
    return (
        [str(r[label]) for r in rows],
        [_asnumber(r[value]) for r in rows],
        str(columns[label]),
        str(columns[value]),
    )


def markdown_table(columns: list, rows: list) -> str:
    """A table shown to the user: the tools' table format (tools/tables.py), at most MAX_TABLE_ROWS_SHOWN rows."""
    return tables.markdown_table(columns, rows, max_rows=MAX_TABLE_ROWS_SHOWN)


def fmt(value: float) -> str:
    return f"{value:,.2f}".rstrip("0").rstrip(".") if isinstance(value, float) else f"{value:,}"


def humanise(name: str) -> str:
    return name.replace("_", " ").strip()


# --- charts from the user's message (rule e) ----------------------------------------------------------

_PAIR = re.compile(r"\b([A-Za-z][A-Za-z0-9_\-]*)\s*[:=]?\s*(-?\d+(?:\.\d+)?)(?![\w.])")
_PAIR_NOISE = frozenset(
    {
        "in",
        "of",
        "for",
        "the",
        "and",
        "to",
        "by",
        "with",
        "from",
        "at",
        "on",
        "or",
        "a",
        "an",
        "is",
        "are",
        "was",
        "top",
        "last",
        "first",
        "next",
        "about",
        "over",
        "under",
    }
)
_TITLE_PREFIX = re.compile(
    r"^\s*(please\s+)?(can you\s+|could you\s+)?(draw|plot|chart|graph|make|create|sketch|show|illustrate)"
    r"(\s+me)?(\s+an?)?(\s+(bar|line|pie))?(\s+(chart|graph|plot|picture|image))?(\s+(of|for|showing|with))?\s*",
    re.I,
)


def parse_pairs(text: str) -> list[tuple[str, float]]:
    """Label/number pairs such as "apples 3, pears 5" or "Q1=10 Q2=14"."""
    pairs = []
    for label, value in _PAIR.findall(text):
        if label.lower() not in _PAIR_NOISE:
            pairs.append((label, number(value)))
    return pairs


def chart_kind(text: str) -> str:
    """The chart a request asks for: "line" (line, trend), "pie" or "bar"."""
    lowered = text.lower()
    if re.search(r"\b(line|trend)", lowered):
        return "line"
    return "pie" if re.search(r"\bpie\b", lowered) else "bar"


def chart_args(text: str, pairs: list, kind: str) -> dict:
    """image_gen arguments for a chart of the label/number `pairs` found in the user's `text`."""
    first = _PAIR.search(text)
    title = _TITLE_PREFIX.sub("", text[: first.start()] if first else "").strip(" :,-–—.")
    if not title:  # "draw a bar chart: apples 3, pears 5" names no subject: its labels are the subject
        labels = [label for label, _ in pairs]
        title = ", ".join(labels[:-1]) + " and " + labels[-1] if len(labels) in (2, 3) else "Chart"
    title = shorten(title[:1].upper() + title[1:], 80)
    return {
        "prompt": shorten(text, 4000),
        "kind": kind,
        "title": title,
        "labels": [label for label, _ in pairs][:MAX_CHART_POINTS],
        "values": [value for _, value in pairs][:MAX_CHART_POINTS],
    }
