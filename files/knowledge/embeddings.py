"""Embeddings of a project's passages, when an embedding model is configured (a models.json entry
with `"embedding": true`, agents/llm/catalog.py, which hands it here through `configure`: files never
imports agents). Called through the OpenAI-compatible `/v1/embeddings` with the openai SDK.

Vectors are stored with their passage as float32 bytes and searched exactly with numpy (cosine), or,
on PostgreSQL with pgvector, also in pgvector's column and searched by the database (vectors.py;
docs/workspace.md#knowledge-search). A passage's vector
is its model's: changing the model embeds every passage again in the background, and until a project's
passages all have the new model's vectors its searches use BM25 alone (search.py says so)."""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from django.db import transaction

from ..models import KnowledgeIndex, Passage
from . import vectors

logger = logging.getLogger("aptix.files.knowledge")

BATCH = 64  # passages per /v1/embeddings request
CACHED_PROJECTS = 8


@dataclass(frozen=True)
class EmbeddingModel:
    key: str  # the models.json key: what a passage's `embedding_model` records
    model: str  # the name the server knows it by
    base_url: str | None
    api_key: str = field(repr=False, default="")
    headers: tuple[tuple[str, str], ...] = field(repr=False, default=())


_provider: Callable[[], EmbeddingModel | None] = lambda: None  # noqa: E731 - none until configured
_cache: OrderedDict[str, tuple[tuple[Any, ...], list[str], Any]] = OrderedDict()
_lock = threading.Lock()


def configure(provider: Callable[[], EmbeddingModel | None]) -> None:
    """Where the configured embedding model comes from (agents/llm/catalog.py, at start-up)."""
    global _provider  # noqa: PLW0603 - set once by the composition root
    _provider = provider


def current_model() -> EmbeddingModel | None:
    return _provider()


def embed_texts(model: EmbeddingModel, texts: list[str]) -> list[list[float]]:
    import openai

    client = openai.OpenAI(
        base_url=model.base_url, api_key=model.api_key or "none", default_headers=dict(model.headers), max_retries=1
    )
    answer = client.embeddings.create(model=model.model, input=texts)
    return [item.embedding for item in sorted(answer.data, key=lambda d: d.index)]


def _as_bytes(vector: list[float]) -> bytes:
    import numpy as np

    return np.asarray(vector, dtype=np.float32).tobytes()


def embed_file(file_id: str) -> int:
    """Embed the document's passages that have no vector of the current model (0 when none is configured)."""
    model = current_model()
    if model is None:
        return 0
    done = 0
    while True:
        batch = list(
            Passage.objects.filter(file_id=file_id)
            .exclude(embedding_model=model.key)
            .order_by("ordinal")
            .values_list("id", "title", "text")[:BATCH]
        )
        if not batch:
            return done
        embedded = embed_texts(model, [f"{title}\n{text}".strip() for _id, title, text in batch])
        in_pgvector = vectors.pgvector_on()
        for (passage_id, _title, _text), vector in zip(batch, embedded, strict=True):
            with transaction.atomic():  # the model's name and its vector, never one without the other
                Passage.objects.filter(pk=passage_id).update(embedding=_as_bytes(vector), embedding_model=model.key)
                if in_pgvector:
                    vectors.store(passage_id, vector)
        done += len(batch)


def embed_missing() -> int:
    """Embed every indexed passage without the current model's vector (after the model changed)."""
    model = current_model()
    if model is None:
        return 0
    files = (
        Passage.objects.filter(file__knowledge__state=KnowledgeIndex.State.INDEXED)
        .exclude(embedding_model=model.key)
        .values_list("file_id", flat=True)
        .distinct()
    )
    return sum(embed_file(file_id) for file_id in list(files))


def ready(project_ids: list[str], model: EmbeddingModel) -> bool:
    """Whether every indexed passage of the projects has the model's vector."""
    passages = Passage.objects.filter(project_id__in=project_ids, file__knowledge__state=KnowledgeIndex.State.INDEXED)
    return not passages.exclude(embedding_model=model.key).exists()


def vector_ranked(project_ids: list[str], query: str, limit: int, model: EmbeddingModel) -> list[str]:
    """The passage ids of the projects nearest the query's vector (cosine), best first: by pgvector
    where the vectors are in it, else by numpy over each project's cached matrix."""
    embedded = embed_texts(model, [query])[0]
    if vectors.pgvector_on():
        return vectors.nearest(project_ids, model.key, embedded, limit)
    return numpy_nearest(project_ids, embedded, limit, model)


def numpy_nearest(project_ids: list[str], query_vector: list[float], limit: int, model: EmbeddingModel) -> list[str]:
    """`vector_ranked` with numpy: exact cosine over the stored bytes."""
    import numpy as np

    query = np.asarray(query_vector, dtype=np.float32)
    query /= np.linalg.norm(query) or 1.0
    found: list[tuple[float, str]] = []
    for project_id in project_ids:
        ids, matrix = _vectors(project_id, model)
        if not ids:
            continue
        scores = matrix @ query
        top = np.argsort(-scores)[:limit]
        found += [(float(scores[i]), ids[i]) for i in top]
    return [passage_id for _score, passage_id in sorted(found, key=lambda p: (-p[0], p[1]))[:limit]]


def _vectors(project_id: str, model: EmbeddingModel) -> tuple[list[str], Any]:
    import numpy as np

    from .ranking import project_version

    version = (*project_version(project_id), model.key)
    with _lock:
        cached = _cache.get(project_id)
        if cached is not None and cached[0] == version:
            return cached[1], cached[2]
    rows = list(
        Passage.objects.filter(project_id=project_id, embedding_model=model.key)
        .order_by("file_id", "ordinal")
        .values_list("id", "embedding")
    )
    ids = [passage_id for passage_id, _ in rows]
    matrix: Any = np.vstack([np.frombuffer(bytes(blob or b""), dtype=np.float32) for _, blob in rows]) if rows else None
    if matrix is not None:
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        matrix = matrix / np.where(norms == 0, 1.0, norms)
    with _lock:
        _cache[project_id] = (version, ids, matrix)
        while len(_cache) > CACHED_PROJECTS:
            _cache.popitem(last=False)
    return ids, matrix
