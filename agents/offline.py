"""The built-in offline model: a deterministic planner behind an OpenAI Chat Completions server.

It serves when no OPENAI_API_KEY / OPENAI_BASE_URL is configured, so the product can be tried and
demonstrated with no model at all. Nothing here is random and nothing touches the network: the
same request body always gives the same reply, tool-call ids included.

Two layers:
- `plan_reply(body, modes=None)` reads a Chat Completions request body (`messages`, `tools`) and
  decides the next step with a few rules (answer from tool results, list modes, map a choice after
  a TUL-007 §4.1 proposal, propose a better mode, draw a chart, query the demo database, help).
- `OfflineModelApp` (agents/offline_app.py) serves it over the Chat Completions protocol; tables
  in tool results are read by agents/offline_tables.py.
"""
from __future__ import annotations

import hashlib
import json
import logging
import re
from dataclasses import dataclass, field
from typing import Any

from .chat_protocol import PlannedReply, PlannedToolCall, prompt_token_estimate
from .offline_tables import MAX_CHART_POINTS, chart_of, fmt, humanise, markdown_table, number, parse_table, shorten

logger = logging.getLogger("aptix.offline")

OFFLINE_MODEL_NAME = "aptix-offline"

LIST_MODES, CHANGE_MODE, IMAGE_GEN = "agent_list_modes", "agent_change_mode", "image_gen"

_STOP_WORDS = frozenset("""
about above after again also been before being below between both could does doing down during each
else even every from further have having here hers herself himself into itself just like make made
many more most much must myself need only other ought ours over please same should show some such
than that their theirs them themselves then there these they this those through under until upon
very want were what when where which while whom whose will with would your yours yourself tell give
help thing things know able okay thanks thank using could mode modes
""".split())

_MODES_QUESTION = re.compile(
    r"\b(what|which|list( the| all)?|available|show( me)?( the)?|all( the)?) modes\b|\bmodes (are|do you|can)\b"
    r"|\bmodes\b.*\b(there|available|exist)\b",
    re.I,
)
_PROPOSAL = re.compile(r"1\)\s*Stay in the current mode.*2\)\s*Switch this session.*3\)\s*Switch to", re.I | re.S)
_PROPOSED_MODE = re.compile(r"\*\*([^*]+)\*\*\s*\(`([^`]+)`\)")
_DRAW = re.compile(r"\b(draw|chart|plot|graph|picture|image|illustrate|sketch)", re.I)
_PAIR = re.compile(r"\b([A-Za-z][A-Za-z0-9_\-]*)\s*[:=]?\s*(-?\d+(?:\.\d+)?)(?![\w.])")
_PAIR_NOISE = frozenset({"in", "of", "for", "the", "and", "to", "by", "with", "from", "at", "on", "or", "a", "an",
                         "is", "are", "was", "top", "last", "first", "next", "about", "over", "under"})
_TITLE_PREFIX = re.compile(
    r"^\s*(please\s+)?(can you\s+|could you\s+)?(draw|plot|chart|graph|make|create|sketch|show|illustrate)"
    r"(\s+me)?(\s+an?)?(\s+(bar|line|pie))?(\s+(chart|graph|plot|picture|image))?(\s+(of|for|showing|with))?\s*",
    re.I,
)
_ERROR_TEXT = re.compile(r"^\s*(\[?error\]?|failed|exception)\b", re.I)
_DATA_WORDS = frozenset({"revenue", "sale", "order", "customer", "product", "top", "total", "average", "count",
                         "monthly", "category", "country", "segment", "avg"})
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
    (("country",), "SELECT c.country AS country, COUNT(*) AS orders FROM orders o "
                   "JOIN customers c ON c.id = o.customer_id GROUP BY c.country ORDER BY orders DESC"),
    (("category",), f"SELECT p.category AS category, {_REVENUE} FROM orders o "
                    "JOIN products p ON p.id = o.product_id GROUP BY p.category ORDER BY revenue DESC"),
    (("segment",), "SELECT segment, COUNT(*) AS customers FROM customers GROUP BY segment ORDER BY customers DESC"),
    (("customer", "new"), "SELECT strftime('%Y-%m', created_at) AS month, COUNT(*) AS new_customers "
                          "FROM customers GROUP BY month ORDER BY month"),
    (("customer",), f"SELECT c.name AS customer, {_REVENUE} FROM orders o JOIN customers c "
                    "ON c.id = o.customer_id GROUP BY c.id, c.name ORDER BY revenue DESC LIMIT 10"),
    (("product",), f"SELECT p.name AS product, {_REVENUE} FROM orders o JOIN products p "
                   "ON p.id = o.product_id GROUP BY p.id, p.name ORDER BY revenue DESC LIMIT 10"),
    (("average",), "SELECT strftime('%Y-%m', ordered_at) AS month, ROUND(AVG(quantity*unit_price), 2) "
                   "AS average_order_value FROM orders GROUP BY month ORDER BY month"),
    (("how-many", "order"), "SELECT strftime('%Y-%m', ordered_at) AS month, COUNT(*) AS orders "
                            "FROM orders GROUP BY month ORDER BY month"),
    (("count", "order"), "SELECT strftime('%Y-%m', ordered_at) AS month, COUNT(*) AS orders "
                         "FROM orders GROUP BY month ORDER BY month"),
]


# --- reading the request ----------------------------------------------------------------------------


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts
        return "".join(p.get("text", "") for p in content if isinstance(p, dict) and isinstance(p.get("text"), str))
    return ""


def _json(text: str) -> Any:
    try:
        return json.loads(text)
    except (TypeError, ValueError):
        return None


def _stem(word: str) -> str:
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
        return word[:-1]
    return word


def _words(text: str) -> list[str]:
    return [_stem(w) for w in re.findall(r"[a-z0-9]+", text.lower().replace("'s", ""))]


_STOP_STEMS = _STOP_WORDS | {_stem(w) for w in _STOP_WORDS}


def keywords(text: str) -> set[str]:
    """Meaningful words: lower-case, no punctuation, no stop words, at least four letters."""
    return {w for w in _words(text) if len(w) >= 4 and w not in _STOP_STEMS and not w.isdigit()}


@dataclass
class ToolResult:
    name: str
    arguments: dict
    content: str


@dataclass
class Conversation:
    messages: list[dict]
    offered: dict[str, dict]  # tool name -> schema
    mode: str | None = None
    execution: str = "ask"
    user_text: str = ""
    previous_assistant: str = ""  # the assistant's last words before the current user message
    previous_user: str = ""  # the user message that came before that
    calls: list[tuple[str, dict]] = field(default_factory=list)  # tool calls made in this turn
    results: list[ToolResult] = field(default_factory=list)  # every tool result of this turn
    trailing: list[ToolResult] = field(default_factory=list)  # the tool results that end the conversation

    @classmethod
    def from_body(cls, body: dict) -> "Conversation":
        messages = [m for m in body.get("messages") or [] if isinstance(m, dict)]
        offered: dict[str, dict] = {}
        if body.get("tool_choice") != "none":
            for schema in body.get("tools") or []:
                name = ((schema or {}).get("function") or {}).get("name") if isinstance(schema, dict) else None
                if isinstance(name, str) and name:
                    offered[name] = schema
        conv = cls(messages=messages, offered=offered)
        system = "\n".join(_text(m.get("content")) for m in messages if m.get("role") in ("system", "developer"))
        if found := re.search(r"^\s*Current mode:\s*([\w.-]+)", system, re.M | re.I):
            conv.mode = found.group(1).lower()
        if found := re.search(r"^\s*Execution:\s*(ask|agent)\b", system, re.M | re.I):
            conv.execution = found.group(1).lower()
        users = [i for i, m in enumerate(messages) if m.get("role") == "user"]
        start = users[-1] if users else 0
        if users:
            conv.user_text = _text(messages[start].get("content")).strip()
            before = messages[:start]
            assistants = [m for m in before if m.get("role") == "assistant" and _text(m.get("content")).strip()]
            if assistants:
                conv.previous_assistant = _text(assistants[-1].get("content"))
                last_assistant = max(i for i, m in enumerate(before) if m is assistants[-1])
                earlier = [m for m in before[:last_assistant] if m.get("role") == "user"]
                conv.previous_user = _text(earlier[-1].get("content")).strip() if earlier else ""
        names: dict[str, tuple[str, dict]] = {}
        for message in messages[start:]:
            if message.get("role") == "assistant":
                for call in message.get("tool_calls") or []:
                    function = call.get("function") or {}
                    args = _json(function.get("arguments") or "{}")
                    entry = (str(function.get("name") or ""), args if isinstance(args, dict) else {})
                    conv.calls.append(entry)
                    names[str(call.get("id"))] = entry
            elif message.get("role") == "tool":
                name, args = names.get(str(message.get("tool_call_id")), (str(message.get("name") or ""), {}))
                conv.results.append(ToolResult(name, args, _text(message.get("content"))))
        ending = 0
        for message in reversed(messages):
            if message.get("role") != "tool":
                break
            ending += 1
        conv.trailing = conv.results[-ending:] if 0 < ending <= len(conv.results) else []
        return conv

    def called(self, name: str, arguments: dict | None = None) -> bool:
        return any(n == name and (arguments is None or a == arguments) for n, a in self.calls)

    def mcp_tool(self, suffix: str, server: str | None = None) -> str | None:
        for name in self.offered:
            head, sep, tail = name.partition("__")
            if sep and tail == suffix and (server is None or head == server):
                return name
        return None


# --- the planner --------------------------------------------------------------------------------------


@dataclass
class _Plan:
    text: str = ""
    calls: list[tuple[str, dict]] = field(default_factory=list)


def _call(name: str, arguments: dict) -> _Plan:
    return _Plan(calls=[(name, arguments)])


async def plan_reply(body: dict, modes: list | None = None) -> PlannedReply:
    """The offline model's next message for a Chat Completions request body.

    `modes` (a list of `AgentModeSummary`) is the active catalog; when None it is loaded from
    `catalog_service` (only if a rule needs it), and a failure to load it counts as "no better mode".
    """
    conv = Conversation.from_body(body if isinstance(body, dict) else {})
    plan = await _plan(conv, modes)
    # Guardrails: only offered tools, and never the same call twice in a turn (answer instead).
    if any(name not in conv.offered or conv.called(name, args) for name, args in plan.calls):
        plan = _Plan(text=_answer(conv) if conv.results else help_text(conv))
    seed = json.dumps(conv.messages, sort_keys=True, default=str)
    tool_calls = [
        PlannedToolCall(name=name, arguments=json.dumps(args), id=_call_id(seed, index))
        for index, (name, args) in enumerate(plan.calls)
    ]
    return PlannedReply(
        content=plan.text, tool_calls=tool_calls,
        prompt_tokens=prompt_token_estimate(conv.messages, body.get("tools") if isinstance(body, dict) else None),
    )


def _call_id(seed: str, index: int) -> str:
    return "call_" + hashlib.sha256(f"{seed}#{index}".encode()).hexdigest()[:24]


async def _plan(conv: Conversation, modes: list | None) -> _Plan:
    if conv.trailing:
        return _after_tools(conv)  # rule a
    text = conv.user_text
    if not text:
        return _Plan(text=help_text(conv))
    if LIST_MODES in conv.offered and _MODES_QUESTION.search(text):  # rule b
        return _call(LIST_MODES, {"includeExamples": False})
    if (plan := _choice(conv)) is not None:  # rule c
        return plan
    if (plan := await _propose_mode(conv, modes)) is not None:  # rule d
        return plan
    data_plan = _data_step(conv)
    if IMAGE_GEN in conv.offered and _DRAW.search(text):  # rule e
        pairs = parse_pairs(text)
        if len(pairs) >= 2:
            return _call(IMAGE_GEN, _chart_args(text, pairs, _chart_kind(text)))
        if data_plan is None or not is_data_question(text):  # "chart revenue by month" (Agent) queries first
            return _call(IMAGE_GEN, {"prompt": text[:4000], "kind": "card"})
    if data_plan is not None:  # rule f
        return data_plan
    return _Plan(text=help_text(conv))  # rule g


# rule c: the user's choice after a TUL-007 §4.1 proposal

def parse_choice(text: str) -> int | None:
    """1 (stay), 2 (switch this session), 3 (switch and start a new session) or None."""
    t = re.sub(r"[^a-z0-9 ]+", " ", text.lower()).split()
    t = " ".join(w for w in t if w not in {"option", "choice", "number", "please", "i", "choose", "pick", "ok"})
    if digit := re.fullmatch(r"([123])( .*)?", t):  # "2", "2) switch this session", "option 3"
        return int(digit.group(1))
    if t in {"1", "one", "stay", "stay here", "keep", "no", "stay in the current mode", "current mode", "first"}:
        return 1
    if t in {"3", "three", "new session", "branch", "third"} or (
        t.startswith("switch") and "new session" in t
    ):
        return 3
    if t in {"2", "two", "switch", "yes", "second", "switch this session", "switch session"} or t.startswith(
        "switch this session"
    ):
        return 2
    return None


def _choice(conv: Conversation) -> _Plan | None:
    if not _PROPOSAL.search(conv.previous_assistant):
        return None
    proposed = _PROPOSED_MODE.search(conv.previous_assistant)
    choice = parse_choice(conv.user_text)
    if proposed is None or choice is None:
        return None
    display, key = proposed.group(1).strip(), proposed.group(2).strip()
    if choice == 1:
        where = f" (`{conv.mode}`)" if conv.mode else ""
        return _Plan(text=f"Okay, we'll stay in the current mode{where}. I'll keep going here: tell me what "
                          "you need next.")
    if CHANGE_MODE not in conv.offered:
        return _Plan(text=f"I can't change the mode from here. Pick **{display}** in the session's mode menu.")
    request = shorten(conv.previous_user or "this work", 120)
    reason = f"The user asked \"{request}\", which fits {display} mode better; the user chose option {choice}."
    return _call(CHANGE_MODE, {"mode": key, "branch": choice == 3, "reason": reason})


# rule d: propose a better mode

def score_modes(text: str, modes: list) -> dict[str, int]:
    """Shared meaningful words between `text` and each mode's example utterances + description."""
    words = keywords(text)
    scores: dict[str, int] = {}
    for mode in modes:
        corpus = " ".join([*(getattr(mode, "example_utterances", None) or []), getattr(mode, "description", "") or ""])
        scores[mode.key] = len(words & keywords(corpus))
    return scores


def _declined(conv: Conversation) -> set[str]:
    """Modes the user already turned down (chose "stay") in this conversation: don't nag."""
    declined: set[str] = set()
    proposal = None
    for message in conv.messages:
        content = _text(message.get("content"))
        if message.get("role") == "assistant" and _PROPOSAL.search(content):
            proposal = _PROPOSED_MODE.search(content)
        elif message.get("role") == "user" and proposal is not None:
            if parse_choice(content) == 1:
                declined.add(proposal.group(2))
            proposal = None
    return declined


async def _propose_mode(conv: Conversation, modes: list | None) -> _Plan | None:
    if modes is None:
        try:
            from modes.catalog import catalog_service

            modes = await catalog_service.get_all_modes()
        except Exception:  # noqa: BLE001 - no catalog means no proposal, never a failed reply
            return None
    try:
        scores = score_modes(conv.user_text, modes or [])
    except Exception:  # noqa: BLE001 - a malformed summary is "no match" too
        return None
    current = scores.get(conv.mode or "", 0)
    declined = _declined(conv)
    best = None
    for mode in modes or []:
        if mode.key == conv.mode or mode.key in declined:
            continue
        score = scores[mode.key]
        if score >= 2 and score > current and (best is None or score > scores[best.key]):
            best = mode
    if best is None:
        return None
    return _Plan(text=proposal_text(best.display_name, best.key))


def proposal_text(display_name: str, key: str) -> str:
    """TUL-007 §4.1's recommended pattern."""
    return (
        f"It seems like what you are asking for would be better served by **{display_name}** (`{key}`) mode.\n"
        f"Would you like to:\n"
        f"1) Stay in the current mode,\n"
        f"2) Switch this session to **{display_name}**, or\n"
        f"3) Switch to **{display_name}** and start a new session for this work?"
    )


# rule e: charts from the message

def parse_pairs(text: str) -> list[tuple[str, float]]:
    """Label/number pairs such as "apples 3, pears 5" or "Q1=10 Q2=14"."""
    pairs = []
    for label, value in _PAIR.findall(text):
        if label.lower() not in _PAIR_NOISE:
            pairs.append((label, number(value)))
    return pairs


def _chart_kind(text: str) -> str:
    lowered = text.lower()
    if re.search(r"\b(line|trend)", lowered):
        return "line"
    return "pie" if re.search(r"\bpie\b", lowered) else "bar"


def _chart_args(text: str, pairs: list, kind: str) -> dict:
    first = _PAIR.search(text)
    title = _TITLE_PREFIX.sub("", text[: first.start()] if first else "").strip(" :,-–—.")
    title = shorten(title[:1].upper() + title[1:], 80) if title else "Chart"
    return {"prompt": shorten(text, 4000), "kind": kind, "title": title,
            "labels": [label for label, _ in pairs][:MAX_CHART_POINTS],
            "values": [value for _, value in pairs][:MAX_CHART_POINTS]}


# rule f: questions about the demo database (Agent execution only)

def is_data_question(text: str) -> bool:
    lowered = " ".join(_words(text))
    return bool(set(_words(text)) & _DATA_WORDS) or any(p in lowered for p in _DATA_PHRASES)


def sql_for(text: str) -> str:
    """A read-only query over the demo dataset for a data question (revenue by month by default)."""
    words = set(_words(text))
    if "how many" in " ".join(_words(text)):
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


def _data_step(conv: Conversation) -> _Plan | None:
    """The next step of the data path (list tables, then query), or None when it does not apply."""
    if conv.execution != "agent":
        return None
    query = conv.mcp_tool("query")
    server = query.partition("__")[0] if query else None
    list_tables = conv.mcp_tool("list_tables", server)
    words = set(_words(conv.user_text))
    tables_only = bool(words & _TABLE_WORDS) and not is_data_question(conv.user_text)
    if tables_only and list_tables and not conv.called(list_tables):
        return _call(list_tables, {})
    if query is None or not is_data_question(conv.user_text):
        return None
    if list_tables and not conv.called(list_tables):
        return _call(list_tables, {})
    if conv.called(query):
        return None
    return _call(query, {_sql_argument(conv.offered[query]): sql_for(conv.user_text)})


# rule a: after tool results

def _after_tools(conv: Conversation) -> _Plan:
    if any(r.name.endswith("__list_tables") for r in conv.trailing) and (step := _data_step(conv)):
        return step
    if IMAGE_GEN in conv.offered and not conv.called(IMAGE_GEN):
        for result in conv.trailing:
            if _is_data_result(result) and tool_error(result) is None and (chart := chart_of(result.content)):
                labels, values, label_col, value_col = chart
                title = f"{humanise(value_col).capitalize()} by {humanise(label_col)}"
                kind = "line" if re.search(r"\b(line|trend)", conv.user_text, re.I) else "bar"
                return _call(IMAGE_GEN, {"prompt": f"{title} ({conv.user_text})"[:4000], "kind": kind,
                                         "title": title, "labels": labels, "values": values})
    return _Plan(text=_answer(conv))


def _is_data_result(result: ToolResult) -> bool:
    """An MCP result worth charting: not the schema browsing tools."""
    return "__" in result.name and not result.name.endswith(("__list_tables", "__describe_table", "__explain"))


def _answer(conv: Conversation) -> str:
    parts: list[str] = []
    trailing = conv.trailing or conv.results[-1:]
    if any(r.name == IMAGE_GEN for r in trailing):  # the DB → chart path: show the data behind the chart
        earlier = [r for r in conv.results if r not in trailing and _is_data_result(r)]
        parts += [_describe_mcp(r) for r in earlier[-1:] if tool_error(r) is None]
    parts += [_describe(r) for r in trailing]
    return "\n\n".join(p for p in parts if p) or "Done."


def tool_error(result: ToolResult) -> str | None:
    """The error a tool reported, or None when it succeeded."""
    data = _json(result.content)
    if isinstance(data, dict):
        error = data.get("error")
        if error:
            return str(error.get("message") or error) if isinstance(error, dict) else str(error)
        if data.get("success") is False or data.get("isError") is True or data.get("is_error") is True:
            return str(data.get("message") or data.get("content") or result.content)
    text = result.content.strip()
    if _ERROR_TEXT.match(text):
        return re.sub(r"^\s*\[?error\]?\s*[:\-]?\s*", "", text, flags=re.I) or text
    expected = {LIST_MODES: "modes", CHANGE_MODE: "success", IMAGE_GEN: "url"}.get(result.name)
    if expected and not (isinstance(data, dict) and data.get(expected) not in (None, False, "")):
        return text or f"{result.name} returned nothing."  # internal tools report errors as plain text
    return None


def _describe(result: ToolResult) -> str:
    error = tool_error(result)
    if error is not None:
        return f"Sorry, `{result.name}` failed: {error}"
    data = _json(result.content)
    if result.name == LIST_MODES:
        lines = [f"- **{m.get('displayName') or m.get('key')}** (`{m.get('key')}`) — {m.get('description') or ''}"
                 .rstrip(" —") for m in data["modes"] if isinstance(m, dict)]
        return "Here are the available modes:\n\n" + "\n".join(lines)
    if result.name == CHANGE_MODE:
        new = data.get("newMode") or data.get("mode")
        text = f"Switched this session to **{new}** mode."
        return text + (f" I'll continue in a new {new} session as you asked." if data.get("branch") else "")
    if result.name == IMAGE_GEN:
        alt = str(data.get("alt") or result.arguments.get("title") or "image").replace("]", ")").replace("[", "(")
        what = "chart" if data.get("kind") in ("bar", "line", "pie") else "image"
        return f"Here is the {what} you asked for:\n\n![{alt}]({data['url']})"
    if "__" in result.name:
        return _describe_mcp(result)
    return "Done. " + shorten(result.content.strip(), 500)


def _describe_mcp(result: ToolResult) -> str:
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
            text += (f"\n\nHighest {humanise(value_col)}: **{labels[top]}** ({fmt(values[top])}); "
                     f"total {fmt(sum(values))} across {len(values)} {humanise(label_col)} values.")
    else:
        data = _json(result.content)
        if isinstance(data, list) and all(isinstance(x, (str, int, float)) for x in data):
            text = f"`{result.name}` returned: " + ", ".join(f"`{x}`" for x in data) + "."
        elif isinstance(data, dict) and all(isinstance(v, (str, int, float, bool, type(None))) for v in data.values()):
            text = f"`{result.name}` returned:\n\n" + "\n".join(f"- {k}: {v}" for k, v in list(data.items())[:12])
        else:
            text = f"`{result.name}` returned: " + shorten(result.content.strip(), 600)
    if sql:
        text += f"\n\nSQL used:\n\n```sql\n{sql}\n```"
    return text


# rule g

def help_text(conv: Conversation) -> str:
    can = []
    if LIST_MODES in conv.offered:
        can.append("list the available modes (ask *\"what modes are there?\"*)")
    can.append("propose a better mode when your request fits one, and switch after you agree")
    if IMAGE_GEN in conv.offered:
        can.append("draw charts (try *\"draw a bar chart: apples 3, pears 5\"*)")
    if conv.execution == "agent" and conv.mcp_tool("query"):
        can.append("query the demo database (try *\"revenue by month\"* or *\"top customers\"*)")
    else:
        can.append("in Agent execution, query the demo database in a mode that offers the SQL tools")
    return (
        "I'm Aptix's **built-in offline model**: a deterministic stand-in that runs when no language "
        "model is configured, so I can't hold a real conversation. Here I can:\n\n"
        + "\n".join(f"- {item}" for item in can)
        + "\n\nTo use a real model, set `OPENAI_API_KEY` (and `OPENAI_BASE_URL` for a compatible server "
        "such as Ollama or vLLM) and `APTIX_LLM_MODEL`, then restart Aptix."
    )
