"""A document's text for files_read: one page (or section), or the passages that best match a few
words, ranked with BM25 (the `bm25s` library, as tool_search uses: DuckDB's fts extension is
downloaded at run time and so is not available offline). A document's pages never change, so its
passages and index are kept per process for the documents read most recently."""

from __future__ import annotations

import json
import re
import threading
from collections import OrderedDict
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from . import storage

PASSAGE_CHARS = 800
CACHED_DOCUMENTS = 16
WORD = re.compile(r"\w+", re.UNICODE)


@dataclass(frozen=True)
class Passage:
    page: int
    title: str | None
    text: str


class _Document:
    def __init__(self, pages: list[dict[str, Any]]) -> None:
        self.pages = pages
        self.passages = [p for page in pages for p in page_passages(page)]
        self._index: Any = None
        self._lock = threading.Lock()

    def index(self) -> Any:
        with self._lock:
            if self._index is None:
                import bm25s  # loaded on first search: numpy is not loaded by a turn that never searches

                corpus = [words(f"{p.title or ''} {p.text}") or ["_"] for p in self.passages] or [["_"]]
                self._index = bm25s.BM25()
                self._index.index(corpus, show_progress=False)
            return self._index


_cache: OrderedDict[str, _Document] = OrderedDict()
_cache_lock = threading.Lock()


def words(text: str) -> list[str]:
    """The words of `text` for ranking: lower case, plurals folded ("hotels" finds "hotel")."""
    return [_stem(w) for w in WORD.findall(text.lower())]


@lru_cache(maxsize=65536)  # a document repeats its words: each is folded once
def _stem(word: str) -> str:
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


def document_pages(data_name: str) -> list[dict[str, Any]]:
    return _document(data_name).pages


def best_passages(data_name: str, query: str, limit: int = 5) -> list[Passage]:
    """The passages of the document that best match `query`, best first (none when nothing matches)."""
    document = _document(data_name)
    terms = words(query)
    if not terms or not document.passages:
        return []
    scores = document.index().get_scores(terms)
    order = sorted((i for i in range(len(document.passages)) if scores[i] > 0), key=lambda i: (-float(scores[i]), i))
    return [document.passages[i] for i in order[:limit]]


def _document(data_name: str) -> _Document:
    with _cache_lock:
        cached = _cache.get(data_name)
        if cached is not None:
            _cache.move_to_end(data_name)
            return cached
    with open(storage.local_path(data_name), encoding="utf-8") as handle:
        document = _Document(json.load(handle))
    with _cache_lock:
        _cache[data_name] = document
        while len(_cache) > CACHED_DOCUMENTS:
            _cache.popitem(last=False)
    return document


def forget(data_name: str) -> None:
    """Drop a deleted document from this process's cache."""
    with _cache_lock:
        _cache.pop(data_name, None)


def page_passages(page: dict[str, Any], overlap: int = 0) -> list[Passage]:
    """A page's text in passages of about PASSAGE_CHARS, cut at paragraph or line ends. With `overlap`,
    each passage after the first starts with the previous one's last lines (at most `overlap`
    characters of whole lines), so a sentence cut at a passage's end is found whole in the next."""
    passages: list[Passage] = []
    current: list[str] = []
    carried = size = 0  # how many of `current`'s lines the previous passage had too; its characters
    for line in page["text"].splitlines():
        if len(current) > carried and size + len(line) > PASSAGE_CHARS:
            passages.append(Passage(page["page"], page.get("title"), "\n".join(current).strip()))
            current, size = _tail_lines(current, overlap)
            carried = len(current)
        current.append(line)
        size += len(line) + 1
    if (len(current) > carried and "\n".join(current).strip()) or (not passages and page.get("title")):
        passages.append(Passage(page["page"], page.get("title"), "\n".join(current).strip()))
    return passages


def _tail_lines(lines: list[str], limit: int) -> tuple[list[str], int]:
    """The last whole lines of `lines` that fit in `limit` characters, and their size."""
    tail: list[str] = []
    size = 0
    for line in reversed(lines):
        if size + len(line) + 1 > limit:
            break
        tail.insert(0, line)
        size += len(line) + 1
    return tail, size
