"""The offline model's data path (rule f, Agent execution only): which questions are about the demo
database, the read-only SQL that answers them, the list-tables-then-query steps, and how a database
(MCP) result is described back to the user."""

from __future__ import annotations

from .conversation import Conversation, Plan, ToolResult
from .tables import chart_of, fmt, humanise, markdown_table, parse_table
from .text import parse_json, shorten, text_words

_DATA_WORDS = frozenset(
    {
        "revenue",
        "sale",
        "order",
        "customer",
        "product",
        "top",
        "total",
        "average",
        "count",
        "monthly",
        "category",
        "country",
        "segment",
        "avg",
    }
)
TOOL_SEARCH = "tool_search"  # offered when the allowed tools do not fit: it finds the others
_DATA_PHRASES = ("per month", "by month", "how many", "number of")
_TABLE_WORDS = frozenset({"table", "schema", "database"})

# Read-only SQL for the demo dataset: customers(id, name, country, segment, created_at),
# products(id, name, category, price), orders(id, customer_id, product_id, quantity, unit_price, ordered_at).
_REVENUE = "ROUND(SUM(o.quantity*o.unit_price), 2) AS revenue"
REVENUE_BY_MONTH_SQL = (
    "SELECT strftime('%Y-%m', ordered_at) AS month, ROUND(SUM(quantity*unit_price), 2) AS revenue "
    "FROM orders GROUP BY month ORDER BY month"
)
_QUERIES: list[tuple[tuple[str, ...], str]] = [  # (all these words must appear, SQL); first match wins
    (
        ("country",),
        "SELECT c.country AS country, COUNT(*) AS orders FROM orders o "
        "JOIN customers c ON c.id = o.customer_id GROUP BY c.country ORDER BY orders DESC",
    ),
    (
        ("category",),
        f"SELECT p.category AS category, {_REVENUE} FROM orders o "
        "JOIN products p ON p.id = o.product_id GROUP BY p.category ORDER BY revenue DESC",
    ),
    (("segment",), "SELECT segment, COUNT(*) AS customers FROM customers GROUP BY segment ORDER BY customers DESC"),
    (
        ("customer", "new"),
        "SELECT strftime('%Y-%m', created_at) AS month, COUNT(*) AS new_customers "
        "FROM customers GROUP BY month ORDER BY month",
    ),
    (
        ("customer",),
        f"SELECT c.name AS customer, {_REVENUE} FROM orders o JOIN customers c "
        "ON c.id = o.customer_id GROUP BY c.id, c.name ORDER BY revenue DESC LIMIT 10",
    ),
    (
        ("product",),
        f"SELECT p.name AS product, {_REVENUE} FROM orders o JOIN products p "
        "ON p.id = o.product_id GROUP BY p.id, p.name ORDER BY revenue DESC LIMIT 10",
    ),
    (
        ("average",),
        "SELECT strftime('%Y-%m', ordered_at) AS month, ROUND(AVG(quantity*unit_price), 2) "
        "AS average_order_value FROM orders GROUP BY month ORDER BY month",
    ),
    (
        ("how-many", "order"),
        "SELECT strftime('%Y-%m', ordered_at) AS month, COUNT(*) AS orders FROM orders GROUP BY month ORDER BY month",
    ),
    (
        ("count", "order"),
        "SELECT strftime('%Y-%m', ordered_at) AS month, COUNT(*) AS orders FROM orders GROUP BY month ORDER BY month",
    ),
]


# rule f: questions about the demo database (Agent execution only)


def is_data_question(text: str) -> bool:
    """Whether `text` asks about the demo data (revenue, orders, customers, "how many" ...)."""
    lowered = " ".join(text_words(text))
    return bool(set(text_words(text)) & _DATA_WORDS) or any(p in lowered for p in _DATA_PHRASES)


def sql_for(text: str) -> str:
    """A read-only query over the demo dataset for a data question (revenue by month by default)."""
    words = set(text_words(text))
    if "how many" in " ".join(text_words(text)):
        words.add("how-many")
    for needed, sql in _QUERIES:
        if all(w in words for w in needed):
            return sql
    return REVENUE_BY_MONTH_SQL


def _sql_argument(schema: dict) -> str:
    props = ((schema.get("function") or {}).get("parameters") or {}).get("properties") or {}
    if not props or "sql" in props:
        return "sql"
    return "query" if "query" in props else next(iter(props))


def data_step(conv: Conversation) -> Plan | None:
    """The next step of the data path (list tables, then query), or None when it does not apply."""
    if conv.execution != "agent":
        return None
    query = conv.mcp_tool("query")
    server = query.partition("__")[0] if query else None
    list_tables = conv.mcp_tool("list_tables", server)
    words = set(text_words(conv.user_text))
    tables_only = bool(words & _TABLE_WORDS) and not is_data_question(conv.user_text)
    if tables_only and list_tables and not conv.called(list_tables):
        return Plan.call(list_tables, {})
    if query is None and is_data_question(conv.user_text) and TOOL_SEARCH in conv.offered:
        # The database tools are allowed but not offered (too many tools for the context): find them.
        return None if conv.called(TOOL_SEARCH) else Plan.call(TOOL_SEARCH, {"query": "sql query database"})
    if query is None or not is_data_question(conv.user_text):
        return None
    if list_tables and not conv.called(list_tables):
        return Plan.call(list_tables, {})
    if conv.called(query):
        return None
    return Plan.call(query, {_sql_argument(conv.offered[query]): sql_for(conv.user_text)})


def is_data_result(result: ToolResult) -> bool:
    """A database result worth charting: an MCP query's (not the schema browsing tools') or files_query's."""
    if result.name == "files_query":  # a query over the session's uploaded tables
        return True
    return "__" in result.name and not result.name.endswith(("__list_tables", "__describe_table", "__explain"))


def as_list(text: str, limit: int) -> str:
    """Lines of a result as a Markdown list, one item each (a list's own items as they are), whole lines up
    to about `limit` characters: run together, "- a - b - c" read as one paragraph."""
    items: list[str] = []
    size = 0
    for line in (line.strip() for line in text.splitlines()):
        if not line:
            continue
        if size + len(line) > limit:
            items.append("- …")
            break
        items.append(line if line[:2] in ("- ", "* ") else f"- {line}")
        size += len(line)
    return "\n".join(items)


def describe_mcp_result(result: ToolResult) -> str:
    """A database (MCP) tool result told to the user: its table (and chart summary), value or text, and the SQL."""
    table = parse_table(result.content)
    sql = result.arguments.get("sql") or result.arguments.get("query")
    if table is not None:
        columns, rows = table
        if result.name.endswith("__list_tables") and len(columns) == 1:
            return "Tables: " + ", ".join(f"`{r[0]}`" for r in rows) + "."
        plural = "s" if len(rows) != 1 else ""
        text = f"`{result.name}` returned {len(rows)} row{plural}:\n\n" + markdown_table(columns, rows)
        if chart := chart_of(result.content):
            labels, values, label_col, value_col = chart
            top = max(range(len(values)), key=lambda i: values[i])
            text += (
                f"\n\nHighest {humanise(value_col)}: **{labels[top]}** ({fmt(values[top])}); "
                f"total {fmt(sum(values))} across {len(values)} {humanise(label_col)} values."
            )
    else:
        data = parse_json(result.content)
        if isinstance(data, list) and all(isinstance(x, (str, int, float)) for x in data):
            text = f"`{result.name}` returned: " + ", ".join(f"`{x}`" for x in data) + "."
        elif isinstance(data, dict) and all(isinstance(v, (str, int, float, bool, type(None))) for v in data.values()):
            text = f"`{result.name}` returned:\n\n" + "\n".join(f"- {k}: {v}" for k, v in list(data.items())[:12])
        elif "\n" in (body := result.content.strip()):  # lines (a list of notes) keep their lines
            text = f"`{result.name}` returned:\n\n" + as_list(body, 600)
        else:
            text = f"`{result.name}` returned: " + shorten(body, 600)
    if sql:
        text += f"\n\nSQL used:\n\n```sql\n{sql}\n```"
    return text
