"""A knowledge search: the best passages of the projects the caller may search (the caller decides
which: projects/scopes.py for a turn, the API after its membership check). BM25 always
(PostgreSQL's full-text search there: ranking.py);
with an embedding model whose vectors are ready, fused with the nearest passages by reciprocal rank
("hybrid"). While the vectors are being made (a new model), BM25 alone, and the result says so."""

from __future__ import annotations

from dataclasses import dataclass

from ..models import Passage
from . import embeddings
from .ranking import Ranked, by_rank, lexical_ranked, rrf

CANDIDATES = 50  # each ranking's depth before fusion


@dataclass(frozen=True)
class Hit:
    id: str
    file_id: str
    file_name: str
    page: int
    unit: str  # "page" (PDF) or "section"
    title: str
    text: str
    score: float


@dataclass(frozen=True)
class SearchResult:
    hits: list[Hit]
    mode: str  # "hybrid" or "bm25"
    note: str = ""  # why BM25 alone when an embedding model is configured


def search(project_ids: list[str], query: str, top_k: int = 5) -> SearchResult:
    """The `top_k` best passages of the projects for `query`, best first."""
    project_ids = list(dict.fromkeys(project_ids))
    if not project_ids or not query.strip():
        return SearchResult([], "bm25")
    depth = max(top_k, CANDIDATES)
    lexical: list[Ranked] = []
    for project_id in project_ids:
        lexical += lexical_ranked(project_id, query, depth)
    lexical.sort(key=by_rank)
    mode, note = "bm25", ""
    model = embeddings.current_model()
    ranked: list[tuple[str, float]] = [(found.id, found.score) for found in lexical[:top_k]]
    if model is not None:
        if embeddings.ready(project_ids, model):
            semantic = embeddings.vector_ranked(project_ids, query, depth, model)
            ranked = rrf([found.id for found in lexical[:depth]], semantic)[:top_k]
            mode = "hybrid"
        else:
            note = "The passages' embeddings are being made; this search used BM25 alone."
    return SearchResult(_hits(ranked), mode, note)


def _hits(ranked: list[tuple[str, float]]) -> list[Hit]:
    rows = Passage.objects.filter(pk__in=[pid for pid, _ in ranked], file__deleted_at__isnull=True).select_related(
        "file"
    )
    by_id = {p.pk: p for p in rows}
    return [
        Hit(
            id=p.pk,
            file_id=p.file_id,
            file_name=p.file.name,
            page=p.page,
            unit=p.file.page_unit,
            title=p.title,
            text=p.text,
            score=round(score, 4),
        )
        for pid, score in ranked
        if (p := by_id.get(pid)) is not None
    ]
