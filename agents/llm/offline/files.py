"""The offline model's files path: questions about the files attached to the session. It lists them
(files_list), then queries a table (files_query: a total, a count, a top-N, the fastest growth, an
average, in SQL it writes from the question and the table's columns) or reads a document (files_read:
the page asked for, or the passages that match the question's words); a chartable result is drawn
with image_gen by the planner, as the database path's results are."""

from __future__ import annotations

import re
from typing import Any

from .conversation import Conversation, Plan, ToolResult
from .tables import markdown_table, parse_pairs, parse_table
from .text import keywords, parse_json, shorten, text_words

FILES_LIST, FILES_QUERY, FILES_READ = "files_list", "files_query", "files_read"
FILES_TOOLS = (FILES_LIST, FILES_QUERY, FILES_READ)
NUMERIC = re.compile(r"^(TINYINT|SMALLINT|INTEGER|BIGINT|HUGEINT|U\w*INT|FLOAT|DOUBLE|DECIMAL|REAL|NUMERIC)", re.I)
PERIOD = re.compile(r"(quarter|month|year|date|period|week|day|time|^q$)", re.I)
DOCUMENT_WORDS = frozenset({"pdf", "document", "doc", "docx", "page", "memo", "report", "say", "says", "mention"})
GROWTH_WORDS = frozenset({"grew", "grow", "growth", "increase", "increased", "rose", "fastest"})
COUNT_PHRASES = ("how many", "number of", "count")
TOP = re.compile(r"\btop\s+(\d{1,3})\b|\b(largest|highest|biggest|best|most)\b", re.I)
PAGE = re.compile(r"\bpage\s+(\d{1,4})\b", re.I)
QUESTION = re.compile(
    r"\?\s*$|^\s*(what|which|who|how|when|where|why|show|list|give|tell|sum|total|count|top|chart|draw|plot"
    r"|summari[sz]e|compare|find|read)\b",
    re.I,
)


def files_step(conv: Conversation) -> Plan | None:
    """The next step of the files path, or None when it does not apply: list the files first, then
    query a table or read a document for the question."""
    if FILES_LIST not in conv.offered or not conv.user_text:
        return None
    if not conv.called(FILES_LIST):
        asks = QUESTION.search(conv.user_text) and len(parse_pairs(conv.user_text)) < 2  # own numbers: a chart
        return Plan.call(FILES_LIST, {}) if asks else None
    listed = next((r for r in reversed(conv.results) if r.name == FILES_LIST), None)
    files = (parse_json(listed.content) or {}).get("files") if listed else None
    if not isinstance(files, list) or conv.called(FILES_QUERY) or conv.called(FILES_READ):
        return None
    documents = [f for f in files if isinstance(f, dict) and f.get("kind") == "document"]
    tables = [t for f in files if isinstance(f, dict) for t in f.get("tables") or [] if isinstance(t, dict)]
    words = set(text_words(conv.user_text))
    if documents and FILES_READ in conv.offered and (not tables or words & DOCUMENT_WORDS or _names(documents, words)):
        return Plan.call(FILES_READ, _read_arguments(conv.user_text, documents, words))
    if tables and FILES_QUERY in conv.offered:
        return Plan.call(FILES_QUERY, {"sql": sql_for_question(conv.user_text, tables)})
    return None


def _names(documents: list[dict], words: set[str]) -> bool:
    return any(set(text_words(str(d.get("name", "")))) & words - {"pdf", "docx", "md", "txt"} for d in documents)


def _read_arguments(text: str, documents: list[dict], words: set[str]) -> dict[str, Any]:
    best = max(documents, key=lambda d: len(set(text_words(str(d.get("name", "")))) & words))
    arguments: dict[str, Any] = {"file": str(best.get("name") or best.get("fileId"))}
    if found := PAGE.search(text):
        arguments["page"] = int(found.group(1))
    elif terms := keywords(text) - DOCUMENT_WORDS - set(text_words(arguments["file"])):
        arguments["query"] = " ".join(sorted(terms))
    return arguments


# --- SQL from a question ----------------------------------------------------------------------------


def quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _mentioned(columns: list[dict], words: set[str]) -> list[dict]:
    return [c for c in columns if set(text_words(str(c.get("name", "")))) & words]


def sql_for_question(text: str, tables: list[dict]) -> str:
    """One SELECT answering `text` over the best-matching table: the fastest growth over a period
    column, a count, a top-N, a total or an average, by the label column the question names."""
    words = set(text_words(text))
    lowered = " ".join(text_words(text))
    table = max(
        tables,
        key=lambda t: (
            len(set(text_words(str(t.get("name", "")))) & words) + len(_mentioned(t.get("columns") or [], words))
        ),
    )
    columns = [c for c in table.get("columns") or [] if isinstance(c, dict) and c.get("name")]
    name = quote(str(table["name"]))
    numeric = [c for c in columns if NUMERIC.match(str(c.get("type", "")))]
    labels = [c for c in columns if c not in numeric]
    periods = [c for c in columns if PERIOD.search(str(c["name"])) and c not in numeric] or [
        c for c in columns if str(c.get("type", "")).upper().startswith(("DATE", "TIMESTAMP"))
    ]
    mentioned = _mentioned(columns, words)
    measure = next((c for c in mentioned if c in numeric), numeric[0] if numeric else None)
    group = next((c for c in mentioned if c in labels and c not in periods), None)
    group = group or next((c for c in labels if c not in periods), None)
    if words & GROWTH_WORDS and periods and group and measure:
        g, p, m = quote(group["name"]), quote(periods[0]["name"]), quote(measure["name"])
        return (
            f"WITH per_period AS (SELECT {g} AS g, {p} AS period, sum({m}) AS v FROM {name} GROUP BY 1, 2), "
            "ends AS (SELECT g, arg_min(v, period) AS first, arg_max(v, period) AS last FROM per_period GROUP BY g) "
            f"SELECT g AS {g}, first, last, last - first AS growth, "
            "round(100.0 * (last - first) / nullif(first, 0), 1) AS growth_pct FROM ends ORDER BY growth_pct DESC"
        )
    by_group = group is not None and (bool(set(text_words(group["name"])) & words) or bool(TOP.search(text)))
    counts_a_measure = measure is not None and measure in mentioned  # "how many orders": the orders column
    if any(phrase in lowered for phrase in COUNT_PHRASES) and not counts_a_measure:
        if by_group and group is not None:
            g = quote(group["name"])
            return f"SELECT {g}, count(*) AS count FROM {name} GROUP BY {g} ORDER BY count DESC"
        return f"SELECT count(*) AS count FROM {name}"
    if measure is None:
        return f"SELECT * FROM {name} LIMIT 10"
    m = quote(measure["name"])
    function, label = ("avg", "average") if words & {"average", "mean", "avg"} else ("sum", "total")
    alias = quote(f"{label}_{measure['name']}")
    if by_group and group is not None:
        g = quote(group["name"])
        limit = ""
        if top := TOP.search(text):
            limit = f" LIMIT {int(top.group(1)) if top.group(1) else 5}"
        return f"SELECT {g}, round({function}({m}), 2) AS {alias} FROM {name} GROUP BY {g} ORDER BY {alias} DESC{limit}"
    return f"SELECT round({function}({m}), 2) AS {alias} FROM {name}"


# --- what the user is told --------------------------------------------------------------------------


def describe_files_result(result: ToolResult) -> str:
    """A files tool's result told to the user."""
    if result.name == FILES_LIST:
        files = (parse_json(result.content) or {}).get("files") or []
        lines = []
        for f in files:
            tables = ", ".join(f"`{t['name']}` ({t['rows']} rows)" for t in f.get("tables") or [])
            unit = f.get("pageUnit") or "page"
            detail = tables or (
                f"{f['pages']} {unit}{'s' if f['pages'] != 1 else ''}" if f.get("pages") else f.get("kind", "")
            )
            lines.append(f"- **{f.get('name')}**: {detail}")
        return "The files attached to this session:\n\n" + "\n".join(lines)
    if result.name == FILES_READ:
        return f"From **{result.arguments.get('file')}**:\n\n" + _quoted(result.content)
    return _describe_query(result)


def _quoted(text: str) -> str:
    body = text.strip()
    if len(body) > 1500:
        body = body[:1500].rsplit("\n", 1)[0] + "\n…"
    return "\n".join(f"> {line}" if line.strip() else ">" for line in body.splitlines())


def _one_column(text: str) -> tuple[list[str], list[list[str]]] | None:
    """A one-column markdown table (a total, a count), which tables.py does not take for a table."""
    lines = [line.strip() for line in text.strip().splitlines() if line.strip().startswith("|")]
    if len(lines) < 3 or lines[1].replace(" ", "") != "|---|":
        return None
    cells = [line.strip("|").strip() for line in lines]
    return [cells[0]], [[cell] for cell in cells[2:]]


def _describe_query(result: ToolResult) -> str:
    sql = str(result.arguments.get("sql") or "")
    table = parse_table(result.content) or _one_column(result.content)
    if table is None:
        return f"`files_query` returned: {shorten(result.content, 600)}"
    columns, rows = table
    lead = ""
    if rows and "growth_pct" in columns and len(columns) >= 5:
        top = rows[0]
        lead = f"**{top[0]}** grew fastest: from {top[1]} to {top[2]} (+{top[3]}, {top[4]}%).\n\n"
    elif len(rows) == 1 and len(columns) == 1:
        lead = f"The {columns[0].replace('_', ' ')} is **{rows[0][0]}**.\n\n"
    text = lead + markdown_table(columns, rows)
    if count := re.search(r"\n\n([^\n]*\brows?\b[^\n]*)$", result.content.strip()):
        text += f"\n\n{count.group(1)}."
    return text + f"\n\nSQL used:\n\n```sql\n{sql}\n```"
