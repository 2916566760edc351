"""The lexical ranking of a project's passages (APTIX_KNOWLEDGE_RANKING).

`postgres` on PostgreSQL: its full-text search — a stored tsvector of each passage (English stemming)
with a GIN index (migration 0005), the query's words OR-ed, ranked by ts_rank_cd; nothing is held in
the process, but every passage that has a word of the query is ranked: 86 ms p50 at 5,000 passages of
prose-like text (bench/knowledge.py), so it is not the default.

`bm25s` (the default, and always on SQLite): BM25 with `bm25s` (the library and word folding of
files_read, files/search.py `words`): one index per project kept in this process and built again when
the project's passages change (its version: how many of its documents are indexed and when the last
of them changed, one query). The index holds passage ids, not texts. A project's first search in a
process builds it while it waits; after that a change is built in the background while searches use
the index they have (a new document is found once its build is done: seconds for 100,000 passages)."""

from __future__ import annotations

import math
import re
import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, NamedTuple

from django.conf import settings
from django.db import close_old_connections, connection
from django.db.models import Count, Max

from ..models import KnowledgeIndex, Passage
from ..search import WORD, words

CACHED_PROJECTS = 8

NAME_SEPARATORS = re.compile(r"[_\-.]+")
RRF_K = 60  # reciprocal rank fusion's constant (Cormack et al.)


@dataclass
class _ProjectIndex:
    version: tuple[Any, ...]
    ids: list[str]
    bm25: Any
    file_words: list[frozenset[str]]  # each indexed document's name as words (name_word_set)
    file_of: Any  # numpy int array: for each passage, its document's place in file_words


_cache: OrderedDict[str, _ProjectIndex] = OrderedDict()
_lock = threading.Lock()
_build_locks: dict[str, threading.Lock] = {}


def project_version(project_id: str) -> tuple[Any, ...]:
    """Changes whenever a document of the project is indexed, indexed again or forgotten."""
    row = KnowledgeIndex.objects.filter(project_id=project_id, state=KnowledgeIndex.State.INDEXED).aggregate(
        n=Count("file_id"), last=Max("updated_at")
    )
    return (row["n"], row["last"])


class Ranked(NamedTuple):
    """A passage a lexical ranking found: its score, and how strongly the query names its document."""

    id: str
    score: float
    named: float = 0.0  # name_weights: the passages of named documents come first


def by_rank(found: Ranked) -> tuple[float, float, str]:
    """The sort key of a lexical ranking (and of several projects' merged)."""
    return (-found.named, -found.score, found.id)


def lexical_ranked(project_id: str, query: str, limit: int) -> list[Ranked]:
    """The project's passages that match `query`, best first: BM25 (bm25s), or
    PostgreSQL's full-text search when APTIX_KNOWLEDGE_RANKING says so and the database is PostgreSQL.
    Either way the passages of the documents the query names come first (`name_weights`)."""
    if settings.APTIX_KNOWLEDGE_RANKING == "postgres" and connection.vendor == "postgresql":
        return full_text_ranked(project_id, query, limit)
    return bm25_ranked(project_id, query, limit)


def name_word_set(file_name: str) -> frozenset[str]:
    """A document's name as the words a query's are compared with."""
    return frozenset(words(name_words(file_name)))


def name_weights(terms: list[str], named: list[frozenset[str]]) -> list[float]:
    """How strongly the query names each document: the inverse document frequency (over the project's
    document names) of each query word its name has, 0 for a document it does not name. A word every
    name has ("policy") names none. The passages of a named document rank before the others (each
    group in its own score's order): "what does the travel policy say about hotels" reads the travel
    policy's page on hotels, not a one-line mention of a hotel in the remote-work policy that BM25's
    length normalisation would put first; a query naming no document ranks as before."""
    total = len(named)
    weights = {}
    for term in set(terms):
        having = sum(1 for name in named if term in name)
        if 0 < having < total:
            weights[term] = math.log(1 + (total - having + 0.5) / (having + 0.5))
    return [sum(weight for term, weight in weights.items() if term in name) for name in named]


FULL_TEXT_SQL = """
SELECT p.id, p.file_id, ts_rank_cd(p.search, q, 1) AS score
FROM files_passage p
JOIN files_knowledgeindex k ON k.file_id = p.file_id AND k.state = %s,
     to_tsquery('english', %s) q
WHERE p.project_id = %s AND p.search @@ q
ORDER BY score DESC, p.id
LIMIT %s
"""
FULL_TEXT_DEPTH = 4  # rows read per passage wanted: the name boost may lift one from below the limit


def full_text_ranked(project_id: str, query: str, limit: int) -> list[Ranked]:
    """PostgreSQL's full-text ranking of the passages, boosted by their documents' names. The passages'
    text does not carry their document's name here, so the query's words that name a document weigh
    through the boost alone (while another word is left to match the text): "travel policy hotels"
    matches the passages about hotels, the travel policy's first, not the travel policy's title page
    that repeats "travel" and "policy"."""
    terms = sorted(set(WORD.findall(query.lower())))
    if not terms:
        return []
    names = dict(
        KnowledgeIndex.objects.filter(project_id=project_id, state=KnowledgeIndex.State.INDEXED).values_list(
            "file_id", "file__name"
        )
    )
    files = list(names)
    name_sets = [name_word_set(names[f]) for f in files]
    named = frozenset().union(*name_sets)
    text_terms = [term for term in terms if words(term)[0] not in named] or terms
    with connection.cursor() as cursor:
        cursor.execute(
            FULL_TEXT_SQL,
            [KnowledgeIndex.State.INDEXED, " | ".join(text_terms), project_id, limit * FULL_TEXT_DEPTH],
        )
        rows = [(passage_id, file_id, float(score)) for passage_id, file_id, score in cursor.fetchall() if score > 0]
    weight = dict(zip(files, name_weights(words(query), name_sets), strict=True))
    found = [Ranked(passage_id, score, weight.get(file_id, 0.0)) for passage_id, file_id, score in rows]
    return sorted(found, key=by_rank)[:limit]


def bm25_ranked(project_id: str, query: str, limit: int) -> list[Ranked]:
    """The project's passages that match `query`, best first (bm25s)."""
    import numpy as np  # loaded only by a process that searches

    terms = words(query)
    if not terms:
        return []
    index = _index(project_id)
    if index is None or not index.ids:
        return []
    scores = index.bm25.get_scores(terms)
    weights = np.asarray(name_weights(terms, index.file_words))
    if weights.any():  # the named documents' passages first (name_weights), each group by its score
        matching = np.flatnonzero(scores > 0)
        per_passage = weights[index.file_of[matching]]
        order = np.lexsort((matching, -scores[matching], -per_passage))[:limit]
        return [Ranked(index.ids[matching[i]], float(scores[matching[i]]), float(per_passage[i])) for i in order]
    top: Any = range(len(index.ids))
    if len(index.ids) > limit * 4:
        top = np.argpartition(-scores, limit)[:limit]
    ordered = sorted((int(i) for i in top if scores[i] > 0), key=lambda i: (-float(scores[i]), i))
    return [Ranked(index.ids[i], float(scores[i])) for i in ordered[:limit]]


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
        if cached is not None:
            _cache.move_to_end(project_id)
        build_lock = _build_locks.setdefault(project_id, threading.Lock())
    if cached is not None and cached.version == version:
        return cached
    if cached is not None:  # changed since: built again in the background, the index at hand serves
        if build_lock.acquire(blocking=False):
            threading.Thread(target=_rebuild, args=(project_id, build_lock), daemon=True).start()
        return cached
    with build_lock:  # none yet: one build per project at a time; the others wait for it
        with _lock:
            cached = _cache.get(project_id)
        if cached is not None and cached.version == version:
            return cached
        return _store(project_id, _build(project_id, version))


def _rebuild(project_id: str, build_lock: threading.Lock) -> None:
    close_old_connections()
    try:
        _store(project_id, _build(project_id, project_version(project_id)))
    finally:
        build_lock.release()
        connection.close()


def _store(project_id: str, built: _ProjectIndex) -> _ProjectIndex:
    with _lock:
        _cache[project_id] = built
        _cache.move_to_end(project_id)
        while len(_cache) > CACHED_PROJECTS:
            _cache.popitem(last=False)
    return built


def wait_built(project_id: str) -> None:
    """Wait for a background build of the project's index to end (tests, bench)."""
    with _lock:
        build_lock = _build_locks.get(project_id)
    if build_lock is not None:
        with build_lock:
            pass


def name_words(file_name: str) -> str:
    """A document's name as words every passage of it carries ("travel_policy.pdf" → "travel policy"):
    "what does the travel policy say about hotels" names the document, and its words must then weigh
    alike on all its passages — else the opening page, which repeats the title, outranks the page
    about hotels (seen with the sample travel policy)."""
    return NAME_SEPARATORS.sub(" ", file_name.rsplit(".", 1)[0])


def _build(project_id: str, version: tuple[Any, ...]) -> _ProjectIndex:
    import bm25s  # numpy is loaded only by a process that searches
    import numpy as np

    rows = (
        Passage.objects.filter(project_id=project_id, file__knowledge__state=KnowledgeIndex.State.INDEXED)
        .order_by("file_id", "ordinal")
        .values_list("id", "file_id", "file__name", "title", "text")
        .iterator(chunk_size=2000)
    )
    ids: list[str] = []
    corpus: list[list[str]] = []
    place: dict[str, int] = {}  # file id → its place in file_words
    file_words: list[frozenset[str]] = []
    file_of: list[int] = []
    for passage_id, file_id, file_name, title, text in rows:
        ids.append(passage_id)
        if file_id not in place:
            place[file_id] = len(file_words)
            file_words.append(name_word_set(file_name))
        file_of.append(place[file_id])
        corpus.append(words(f"{name_words(file_name)} {title} {text}") or ["_"])
    bm25 = bm25s.BM25()
    bm25.index(corpus or [["_"]], show_progress=False)
    return _ProjectIndex(
        version=version, ids=ids, bm25=bm25, file_words=file_words, file_of=np.asarray(file_of, dtype=np.int32)
    )
