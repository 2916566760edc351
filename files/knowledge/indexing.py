"""Indexing a project's documents in the background: never in the upload's request.

`index_file` marks the document pending and, once the transaction that saved it commits, hands it to
a thread of this process (one at a time: the machine has few cores and the web process serves pages
meanwhile). The thread splits the document's pages into passages (files/search.py page_passages),
writes them in batches (the project page shows "indexed 120/300 passages" as they land), then embeds
them when an embedding model is configured (embeddings.py). `sweep_pending` (a start-up hook,
aptix/asgi.py) takes up the documents a stopped process left pending or indexing."""

from __future__ import annotations

import json
import logging
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from django.db import close_old_connections, connection, transaction
from django.utils import timezone

from .. import storage
from ..models import KnowledgeIndex, Passage, SessionFile
from ..search import page_passages

logger = logging.getLogger("aptix.files.knowledge")

BATCH = 500  # passages written (and counted on the page) at a time
# Characters of whole lines a passage repeats from the one before it on the same page: a sentence cut at a
# passage's end is found whole in the next (files_read's passages, shown to the model, have none).
OVERLAP = 200
TITLE_MAX = 255

_executor: ThreadPoolExecutor | None = None
_executor_lock = threading.Lock()
_running: set[Future[Any]] = set()


def _pool() -> ThreadPoolExecutor:
    global _executor  # noqa: PLW0603 - one per process, made on first use
    with _executor_lock:
        if _executor is None:
            _executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="knowledge")
        return _executor


def indexable(file: SessionFile) -> bool:
    return file.project_id is not None and file.kind == SessionFile.Kind.DOCUMENT and file.deleted_at is None


def index_file(file: SessionFile) -> bool:
    """Index a project's document in the background, once the current transaction commits (at once
    outside one). Anything else (a table, an image, a session's file) is not indexed: False."""
    if not indexable(file):
        return False
    KnowledgeIndex.objects.update_or_create(
        file=file,
        defaults={"project_id": file.project_id, "state": KnowledgeIndex.State.PENDING, "error": ""},
    )
    file_id = file.pk
    transaction.on_commit(lambda: _submit(file_id))
    return True


def forget_file(file: SessionFile) -> None:
    """A project file is deleted (or leaves its project): its passages and index state go."""
    Passage.objects.filter(file_id=file.pk).delete()
    KnowledgeIndex.objects.filter(file_id=file.pk).delete()


def sweep_pending() -> int:
    """Index again the documents a stopped process left pending or indexing (a start-up hook)."""
    states = [KnowledgeIndex.State.PENDING, KnowledgeIndex.State.INDEXING]
    ids = list(KnowledgeIndex.objects.filter(state__in=states).values_list("file_id", flat=True))
    for file_id in ids:
        _submit(file_id)
    return len(ids)


def start_knowledge_indexer() -> None:
    """The start-up hook (aptix/asgi.py): the sweep, on the indexer's thread (start-up never waits for
    the database), then the passages a new embedding model has no vectors for yet."""
    _submit_call(_sweep_then_embed)


def _sweep_then_embed() -> None:
    close_old_connections()
    try:
        sweep_pending()
        from .embeddings import embed_missing
        from .vectors import pgvector_enable

        pgvector_enable()  # pgvector installed since the last start: the vectors move into it
        embed_missing()
    except Exception:  # a failed sweep is logged; uploads are indexed all the same
        logger.exception("The knowledge indexer's start-up sweep failed")
    finally:
        connection.close()


def wait_idle(timeout: float | None = None) -> None:
    """Wait until the documents handed to this process's indexer so far are indexed (tests, bench)."""
    while True:
        with _executor_lock:
            pending = list(_running)
        if not pending:
            return
        for future in pending:
            future.result(timeout=timeout)


def index_progress(project_id: str) -> list[dict[str, Any]]:
    """Each document's indexing in the project, by name: {"file_id", "name", "state", "done", "total",
    "error"} (the project page's progress)."""
    rows = KnowledgeIndex.objects.filter(project_id=project_id, file__deleted_at__isnull=True).select_related("file")
    return [
        {
            "file_id": r.file_id,
            "name": r.file.name,
            "state": r.state,
            "done": r.passages_done,
            "total": r.passages_total,
            "error": r.error,
        }
        for r in rows.order_by("file__name", "file_id")
    ]


def _submit(file_id: str) -> None:
    _submit_call(_run, file_id)


def _submit_call(function: Any, *args: Any) -> None:
    future = _pool().submit(function, *args)
    with _executor_lock:
        _running.add(future)
    future.add_done_callback(_done)


def _done(future: Future[Any]) -> None:
    with _executor_lock:
        _running.discard(future)


def _run(file_id: str) -> None:
    close_old_connections()
    try:
        index_now(file_id)
    except Exception as exc:  # a failed document says why on the page; the thread goes on
        logger.exception("Indexing file %s failed", file_id)
        KnowledgeIndex.objects.filter(file_id=file_id).update(state=KnowledgeIndex.State.FAILED, error=str(exc)[:500])
    finally:
        connection.close()


def index_now(file_id: str) -> int:
    """Split and index one document now, in this thread; the number of passages (0: nothing to index)."""
    file = SessionFile.objects.filter(pk=file_id).first()
    if file is None or not indexable(file):
        KnowledgeIndex.objects.filter(file_id=file_id).delete()
        return 0
    with open(storage.local_path(file.data_name), encoding="utf-8") as handle:
        pages = json.load(handle)
    passages = [p for page in pages for p in page_passages(page, overlap=OVERLAP)]
    project_id = str(file.project_id)
    KnowledgeIndex.objects.filter(file_id=file_id).update(
        state=KnowledgeIndex.State.INDEXING, passages_done=0, passages_total=len(passages), error=""
    )
    Passage.objects.filter(file_id=file_id).delete()  # indexed again: no passage twice
    for start in range(0, len(passages), BATCH):
        batch = passages[start : start + BATCH]
        Passage.objects.bulk_create(
            Passage(
                file_id=file_id,
                project_id=project_id,
                page=p.page,
                title=(p.title or "")[:TITLE_MAX],
                ordinal=start + i,
                text=p.text,
            )
            for i, p in enumerate(batch)
        )
        KnowledgeIndex.objects.filter(file_id=file_id).update(passages_done=start + len(batch))
    if not SessionFile.objects.filter(pk=file_id, deleted_at__isnull=True, project_id=file.project_id).exists():
        forget_file(file)  # deleted (or moved out) while it was indexed
        return 0
    # updated_at by hand: update() skips auto_now, and the project's version (ranking.py) reads it
    KnowledgeIndex.objects.filter(file_id=file_id).update(state=KnowledgeIndex.State.INDEXED, updated_at=timezone.now())
    from .embeddings import embed_file  # the vectors come after: BM25 finds the passages meanwhile

    try:
        embed_file(file_id)
    except Exception:  # the model server is down: BM25 serves (and says so) until the start-up sweep
        logger.exception("Embedding the passages of file %s failed; its searches use BM25 alone", file_id)
    return len(passages)
