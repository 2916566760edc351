"""BM25 over a project's passages: one `bm25s` index per project, kept in this process and built
again when the project's passages change (its version: how many of its documents are indexed and
when the last of them changed, one query). The same library and word folding as files_read
(files/search.py `words`), on SQLite and PostgreSQL alike; the index holds passage ids, not texts
(the texts of the best ones are read from the database)."""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from django.db.models import Count, Max

from ..models import KnowledgeIndex, Passage
from ..search import words

CACHED_PROJECTS = 8

RRF_K = 60  # reciprocal rank fusion's constant (Cormack et al.)


@dataclass
class _ProjectIndex:
    version: tuple[Any, ...]
    ids: list[str]
    bm25: Any


_cache: OrderedDict[str, _ProjectIndex] = OrderedDict()
_lock = threading.Lock()
_build_locks: dict[str, threading.Lock] = {}


def project_version(project_id: str) -> tuple[Any, ...]:
    """Changes whenever a document of the project is indexed, indexed again or forgotten."""
    row = KnowledgeIndex.objects.filter(project_id=project_id, state=KnowledgeIndex.State.INDEXED).aggregate(
        n=Count("file_id"), last=Max("updated_at")
    )
    return (row["n"], row["last"])


def bm25_ranked(project_id: str, query: str, limit: int) -> list[tuple[str, float]]:
    """(passage id, score) of the project's passages that match `query`, best first."""
    terms = words(query)
    if not terms:
        return []
    index = _index(project_id)
    if index is None or not index.ids:
        return []
    scores = index.bm25.get_scores(terms)
    top: Any = range(len(index.ids))
    if len(index.ids) > limit * 4:
        import numpy as np

        top = np.argpartition(-scores, limit)[:limit]
    order = sorted((int(i) for i in top if scores[i] > 0), key=lambda i: (-float(scores[i]), i))
    return [(index.ids[i], float(scores[i])) for i in order[:limit]]


def rrf(*rankings: list[str], k: int = RRF_K) -> list[tuple[str, float]]:
    """Reciprocal rank fusion: each id scores the sum of 1 / (k + its rank) over the rankings."""
    scores: dict[str, float] = {}
    for ranking in rankings:
        for rank, item in enumerate(ranking, start=1):
            scores[item] = scores.get(item, 0.0) + 1.0 / (k + rank)
    return sorted(scores.items(), key=lambda pair: (-pair[1], pair[0]))


def forget_project(project_id: str) -> None:
    with _lock:
        _cache.pop(project_id, None)


def _index(project_id: str) -> _ProjectIndex | None:
    version = project_version(project_id)
    with _lock:
        cached = _cache.get(project_id)
        if cached is not None and cached.version == version:
            _cache.move_to_end(project_id)
            return cached
        build_lock = _build_locks.setdefault(project_id, threading.Lock())
    with build_lock:  # one build per project at a time; the others wait for it
        with _lock:
            cached = _cache.get(project_id)
            if cached is not None and cached.version == version:
                return cached
        built = _build(project_id, version)
        with _lock:
            _cache[project_id] = built
            _cache.move_to_end(project_id)
            while len(_cache) > CACHED_PROJECTS:
                _cache.popitem(last=False)
        return built


def _build(project_id: str, version: tuple[Any, ...]) -> _ProjectIndex:
    import bm25s  # numpy is loaded only by a process that searches

    rows = (
        Passage.objects.filter(project_id=project_id, file__knowledge__state=KnowledgeIndex.State.INDEXED)
        .order_by("file_id", "ordinal")
        .values_list("id", "title", "text")
        .iterator(chunk_size=2000)
    )
    ids: list[str] = []
    corpus: list[list[str]] = []
    for passage_id, title, text in rows:
        ids.append(passage_id)
        corpus.append(words(f"{title} {text}") or ["_"])
    bm25 = bm25s.BM25()
    bm25.index(corpus or [["_"]], show_progress=False)
    return _ProjectIndex(version=version, ids=ids, bm25=bm25)
