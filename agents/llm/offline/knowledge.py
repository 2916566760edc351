"""The offline model's knowledge path (rule m): in a session of a project with documents
(knowledge_search offered), a question that is not about a table's figures is searched in the
project's documents, and the answer quotes the best passage and cites it (file, page, link), as a
real model is asked to (tools/builtin/knowledge_search.py)."""

from __future__ import annotations

import re

from .conversation import Conversation, Plan, ToolResult
from .data import is_data_question
from .files import COUNT_PHRASES, GROWTH_WORDS, QUESTION, TOP
from .text import text_words

KNOWLEDGE_SEARCH = "knowledge_search"
# What a question is framed with rather than about: left out of the search's query, as a model writing
# a query leaves them out ("What does the travel policy say about hotels?" → "travel policy hotels").
FRAMING_WORDS = frozenset(
    {
        "a",
        "about",
        "an",
        "are",
        "can",
        "do",
        "does",
        "for",
        "how",
        "i",
        "in",
        "is",
        "me",
        "of",
        "on",
        "our",
        "please",
        "say",
        "says",
        "tell",
        "the",
        "to",
        "we",
        "what",
        "when",
        "where",
        "which",
        "who",
        "why",
        "you",
    }
)
TABLE_WORDS = frozenset({"total", "sum", "average", "revenue", "sales", "chart", "plot", "draw", "region", "rows"})
# One passage of the tool's result: [n] “file”, unit N — title (passage id, score s) / cite: [..](link) / text
PASSAGE = re.compile(
    r"^\[\d+\] “(?P<file>[^”]*)”, (?P<unit>page|section) (?P<page>\d+)(?: — (?P<title>.*?))? "
    r"\(passage (?P<id>[0-9a-f]{32}), score [^)]*\)\ncite: (?P<cite>\[[^\n]*\]\([^)\s]*\))\n"
    r"(?P<text>.*?)(?=\n\n\[\d+\] |\Z)",
    re.S | re.M,
)


def knowledge_step(conv: Conversation) -> Plan | None:
    """Search the project's documents for the user's question, once; None when this path does not apply."""
    if KNOWLEDGE_SEARCH not in conv.offered or not conv.user_text or conv.called(KNOWLEDGE_SEARCH):
        return None
    text = conv.user_text
    if not QUESTION.search(text):
        return None
    words = set(text_words(text))
    if words & (TABLE_WORDS | GROWTH_WORDS) or TOP.search(text) or any(p in text.lower() for p in COUNT_PHRASES):
        return None  # a table's figures: the files path
    if is_data_question(text):
        return None  # the demo database's: the data path
    return Plan.call(KNOWLEDGE_SEARCH, {"query": search_query(text), "top_k": 3})


def search_query(text: str) -> str:
    """The question's own words, without what frames it (the whole question when nothing else is left)."""
    kept = [word for word in re.findall(r"[\w'-]+", text) if word.lower() not in FRAMING_WORDS]
    return (" ".join(kept) or text.strip())[:500]


def found_nothing(result: ToolResult) -> bool:
    """The search found no passage (or failed): the other paths may still answer."""
    return not PASSAGE.search(result.content)


def describe_knowledge_result(result: ToolResult) -> str:
    """The answer from the best passage, quoted and cited; the others as further citations."""
    found = list(PASSAGE.finditer(result.content))
    if not found:
        return "I found nothing about this in the project's documents."
    best = found[0]
    where = f"{best['unit']} {best['page']}" + (f" ({best['title']})" if best["title"] else "")
    quote = "\n".join(f"> {line}" if line.strip() else ">" for line in best["text"].strip().splitlines())
    parts = [f"According to **{best['file']}**, {where}:\n\n{quote}\n\nSource: {best['cite']}"]
    if others := [m["cite"] for m in found[1:]]:
        parts.append("See also: " + ", ".join(others))
    return "\n\n".join(parts)
