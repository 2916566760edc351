"""The title a session gets when no model names it (the offline model, which cannot summarise, or a
title call that failed): built from what the first exchange made and what the message asked for, so
that sessions tell apart in the sidebar — "Caching ADR" (the document the turn wrote), "Revenue by
month (chart)" (the chart it drew), "Sales by region · sales.csv" (the key words of the message and
the file it carried) — instead of the message's opening characters, which often all start alike
("Can you please…")."""

from __future__ import annotations

import json
import re

from tools.registry import result_image

from ..models import Turn, TurnEvent

TITLE_CHARS = 60
KEY_WORDS = 6
JOINING = frozenset(["by", "of", "per", "vs"])  # kept between two words of the subject
# Words that carry no subject: requests' politeness, pronouns, articles, question words, filler verbs.
FILLER = frozenset(
    [
        "a",
        "an",
        "the",
        "and",
        "or",
        "but",
        "of",
        "for",
        "to",
        "in",
        "on",
        "at",
        "by",
        "with",
        "about",
        "from",
        "into",
        "as",
        "is",
        "are",
        "was",
        "were",
        "be",
        "been",
        "it",
        "its",
        "this",
        "that",
        "these",
        "those",
        "there",
        "here",
        "what",
        "which",
        "who",
        "whom",
        "how",
        "why",
        "when",
        "where",
        "do",
        "does",
        "did",
        "can",
        "could",
        "would",
        "should",
        "will",
        "shall",
        "may",
        "might",
        "must",
        "please",
        "pls",
        "kindly",
        "hi",
        "hello",
        "hey",
        "i",
        "me",
        "my",
        "mine",
        "we",
        "us",
        "our",
        "you",
        "your",
        "let",
        "lets",
        "let's",
        "tell",
        "show",
        "give",
        "make",
        "help",
        "want",
        "need",
        "like",
        "just",
        "some",
        "any",
        "all",
        "also",
        "then",
        "now",
        "so",
        "very",
        "really",
        "get",
        "got",
        "write",
        "draft",
        "create",
    ]
)
_WORD = re.compile(r"[^\W_][\w'’.-]*", re.UNICODE)
_CLAUSE = re.compile(r"[,;:?!\n]|\.\s|\s(?:and|then|but)\s", re.IGNORECASE)


def fallback_title(turn: Turn) -> str:
    """A title from the session's first exchange (`turn`); empty when there is nothing to say."""
    events = list(TurnEvent.objects.filter(turn=turn, type__in=("document.updated", "tool.result")))
    documents = [e.payload.get("title") for e in events if e.type == "document.updated" and e.payload.get("title")]
    if documents:
        return _cut(documents[-1])
    words = key_words(turn.user_message)
    image = _image_title(events)
    if image:
        return _cut(image)
    files = [f.get("name") for f in turn.files or [] if f.get("name")]
    if files:
        return _cut(f"{words} · {files[0]}" if words else files[0])
    return _cut(words)


def key_words(message: str) -> str:
    """The words of the message's first clause that carry its subject, in its order, the first
    capitalised ("Chart revenue by month for our orders data, and …" → "Chart revenue by month orders
    data"); a joining word (by, of, per, vs) stays between two kept words. Empty when fewer than two
    words are left: a short question ("What modes are there?") says more as it is."""
    clause = _CLAUSE.split(message.strip(), maxsplit=1)[0]
    words = [w.strip(".'’-") for w in _WORD.findall(clause)]
    kept: list[str] = []
    for word in words:
        lower = word.lower()
        if not word or (lower in FILLER and not (lower in JOINING and kept)):
            continue
        kept.append(word)
    while kept and kept[-1].lower() in JOINING:
        kept.pop()
    kept = kept[:KEY_WORDS]
    if len([w for w in kept if w.lower() not in JOINING]) < 2:
        return ""
    text = " ".join(kept)
    return text[:1].upper() + text[1:]


def _image_title(events: list[TurnEvent]) -> str:
    """What the first image the turn made shows (its alt text), "(chart)" or "(image)" after it: any
    tool whose result is an image on this site says so (tools/base.py ShowsImage)."""
    for event in events:
        if event.type != "tool.result" or not event.payload.get("ok"):
            continue
        result = event.payload.get("result") or ""
        image = result_image(event.payload.get("name") or "", result)
        if image is None or not image["alt"].strip() or image["alt"] == "image":
            continue
        try:
            kind = json.loads(result).get("kind")
        except (ValueError, AttributeError):
            kind = None
        alt = image["alt"].strip()
        label = "chart" if kind not in (None, "card", "image") else "image"
        return alt if label in alt.lower() else f"{alt} ({label})"
    return ""


def _cut(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= TITLE_CHARS else text[: TITLE_CHARS - 1].rstrip() + "…"
