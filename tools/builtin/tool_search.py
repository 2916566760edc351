"""`tool_search` {"query"}: finds tools that are allowed but not offered in the request, when the
allowed tools' schemas would not fit the model's context (agents/run/pipeline.py decides when).

The catalog it searches is the turn's: the tools the mode's policy and the session's toggles allow
but the request does not carry. So an instance is built per turn (agents/run/toolsearch.py) rather
than once per process: it is in `tools.registry.PER_TURN_TOOLS` (BuiltPerTurn), and meets the tool contract.

Ranking is BM25 (the `bm25s` library) over each tool's name, server and description. Names are split
into words (`sql__list_tables` → sql, list, tables) and words lightly stemmed (orders → order), since
a model asks in words ("how many orders") and tools are named in identifiers.
"""

from __future__ import annotations

import json
import re
from typing import Any, ClassVar

from ..base import InvokeResult, ToolContext, ToolSummary, TurnTools, function_schema

TOOL_NAME = "tool_search"
_WORD = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+")
# Words too common in tool descriptions and requests to tell tools apart.
_STOPWORDS = frozenset(
    {"a", "an", "and", "are", "as", "at", "be", "by", "can", "do", "does", "for", "from", "get", "how", "i", "in"}
    | {"is", "it", "many", "me", "much", "of", "on", "or", "show", "the", "there", "this", "to", "tool", "tools"}
    | {"use", "what", "which", "with", "you", "your"}
)


Found = ToolSummary  # one tool of the catalog (its name, MCP server and description's first line)


def words(text: str) -> list[str]:
    """Lower-case words of `text`, identifiers split (camelCase, snake_case), plurals folded."""
    out = []
    for found in _WORD.findall(text or ""):
        word = found.lower()
        if word in _STOPWORDS:
            continue
        plural = len(word) > 3 and word.endswith("s") and not word.endswith("ss")
        out.append(word[:-1] if plural else word)
    return out


def rank(catalog: list[Found], query: str, limit: int) -> list[Found]:
    """The catalog's tools that match `query`, best first (BM25; ties keep the catalog's order)."""
    terms = words(query)
    if not catalog or not terms:
        return []
    import bm25s  # imported on first search: a turn that never searches does not load numpy

    corpus = [words(f"{f.name} {f.server} {f.description}") or ["_"] for f in catalog]
    index = bm25s.BM25()
    index.index(corpus, show_progress=False)
    scores = index.get_scores(terms)
    order = sorted((i for i in range(len(catalog)) if scores[i] > 0), key=lambda i: (-float(scores[i]), i))
    return [catalog[i] for i in order[:limit]]


class ToolSearchTool:
    TOOL_NAME: ClassVar[str] = TOOL_NAME
    TOOL_USAGE_METADATA: ClassVar[str] = (
        "More tools are available than this request carries. When you need a tool that is not offered, call "
        "tool_search with a few words saying what it should do; the tools it returns are offered from your next "
        "step on. Call them directly then."
    )
    is_tool_fully_executed_on_server = True

    def __init__(self, catalog: list[Found] | None = None, *, limit: int = 8) -> None:
        self.catalog = list(catalog or [])
        self.limit = limit

    @staticmethod
    def offered(turn: TurnTools) -> bool:
        """Offered when some allowed tools are not in the request (tools/base.py BuiltPerTurn)."""
        return bool(turn.on_demand)

    @classmethod
    def for_turn(cls, turn: TurnTools) -> ToolSearchTool:
        """The turn's instance: its catalog is the turn's tools on demand."""
        return cls(list(turn.on_demand), limit=turn.search_results)

    @staticmethod
    def found_names(result: str) -> list[str]:
        """The tools a result found, offered from the next step on (tools/base.py FindsTools)."""
        return found_names(result)

    @staticmethod
    def get_schema() -> dict[str, Any]:
        return function_schema(
            TOOL_NAME,
            "Find tools that are available but not offered yet, by what they do. Returns their names, servers and "
            "descriptions; they are offered from the next step on.",
            {"query": {"type": "string", "description": "a few words: what the tool should do"}},
            required=["query"],
        )

    async def execute(self, arguments_json: str | None, context: ToolContext | None) -> InvokeResult:
        try:
            arguments = json.loads(arguments_json or "{}")
        except ValueError:
            arguments = None
        query = arguments.get("query") if isinstance(arguments, dict) else None
        if not isinstance(query, str) or not query.strip():
            return InvokeResult.from_error('tool_search needs {"query": "<a few words>"}.')
        found = rank(self.catalog, query, self.limit)
        if found:
            return InvokeResult.create(
                json.dumps(
                    {
                        "query": query,
                        "tools": [f.as_json() for f in found],
                        "note": "These tools are offered from your next step on: call them directly.",
                    }
                )
            )
        servers = sorted({f.server for f in self.catalog if f.server})
        return InvokeResult.create(
            json.dumps(
                {
                    "query": query,
                    "tools": [],
                    "message": f"No tool matches {query!r}. Try other words; the servers with tools to find are: "
                    + (", ".join(servers) or "none")
                    + ".",
                    "servers": servers,
                }
            )
        )


def found_names(result: str) -> list[str]:
    """The tool names a tool_search result returned (none for an error or an empty search)."""
    try:
        data = json.loads(result or "{}")
    except ValueError:
        return []
    tools = data.get("tools") if isinstance(data, dict) else None
    return [t["name"] for t in tools or [] if isinstance(t, dict) and isinstance(t.get("name"), str)]
