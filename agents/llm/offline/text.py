"""Text helpers of the offline model: message content as text, lenient JSON, the meaningful words
of a text (for matching requests to modes and data questions) and shortening for display."""

from __future__ import annotations

import json
import re
from typing import Any

_STOP_WORDS = frozenset(
    [
        "about",
        "above",
        "after",
        "again",
        "also",
        "been",
        "before",
        "being",
        "below",
        "between",
        "both",
        "could",
        "does",
        "doing",
        "down",
        "during",
        "each",
        "else",
        "even",
        "every",
        "from",
        "further",
        "have",
        "having",
        "here",
        "hers",
        "herself",
        "himself",
        "into",
        "itself",
        "just",
        "like",
        "make",
        "made",
        "many",
        "more",
        "most",
        "much",
        "must",
        "myself",
        "need",
        "only",
        "other",
        "ought",
        "ours",
        "over",
        "please",
        "same",
        "should",
        "show",
        "some",
        "such",
        "than",
        "that",
        "their",
        "theirs",
        "them",
        "themselves",
        "then",
        "there",
        "these",
        "they",
        "this",
        "those",
        "through",
        "under",
        "until",
        "upon",
        "very",
        "want",
        "were",
        "what",
        "when",
        "where",
        "which",
        "while",
        "whom",
        "whose",
        "will",
        "with",
        "would",
        "your",
        "yours",
        "yourself",
        "tell",
        "give",
        "help",
        "thing",
        "things",
        "know",
        "able",
        "okay",
        "thanks",
        "thank",
        "using",
        "could",
        "mode",
        "modes",
    ]
)


def content_text(content: Any) -> str:
    """A message's `content` as text: a string as is, the text of content parts joined, else ""."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts
        return "".join(p.get("text", "") for p in content if isinstance(p, dict) and isinstance(p.get("text"), str))
    return ""


def parse_json(text: str) -> Any:
    """The JSON value of `text`, or None when it is not JSON."""
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


def text_words(text: str) -> list[str]:
    """The words of `text`: lower-case, no punctuation, plurals stemmed ("categories" → "category")."""
    return [_stem(w) for w in re.findall(r"[a-z0-9]+", text.lower().replace("'s", ""))]


_STOP_STEMS = _STOP_WORDS | {_stem(w) for w in _STOP_WORDS}


def keywords(text: str) -> set[str]:
    """Meaningful words: lower-case, no punctuation, no stop words, at least four letters."""
    return {w for w in text_words(text) if len(w) >= 4 and w not in _STOP_STEMS and not w.isdigit()}


def shorten(text: str, limit: int) -> str:
    """`text` on one line, cut to `limit` characters with an ellipsis."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"
