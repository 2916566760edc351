"""Where a passage's vector lives and how the nearest are found.

Every passage keeps its vector as float32 bytes (`Passage.embedding`), which numpy searches exactly
(embeddings.py): SQLite, and PostgreSQL without pgvector. On PostgreSQL with the pgvector extension
the vector is also in a `vector` column of `files_passage` and the database finds the nearest
(`<=>`, cosine distance, exact: a project's passages are few enough that a scan beats an index
that would need one fixed dimension for every embedding model). The column is not a model field,
since SQLite has no such type: it is added by migration 0007 when the server has the extension, or
at start-up (`pgvector_enable`) once pgvector is installed later, and filled from the bytes.

Python's sqlite3 here cannot load extensions (no `enable_load_extension`), so sqlite-vec is not used
(docs/workspace.md#knowledge-search)."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

from django.db import DatabaseError, connection, transaction
from django.db.backends.base.base import BaseDatabaseWrapper

logger = logging.getLogger("aptix.files.knowledge")

_enabled: dict[str, bool] = {}  # per database alias: whether the `vector` column is there

NEAREST_SQL = """
SELECT p.id FROM files_passage p
WHERE p.project_id = ANY(%s) AND p.embedding_model = %s AND p.vector IS NOT NULL
ORDER BY p.vector <=> %s::vector, p.id
LIMIT %s
"""


def literal(vector: Iterable[float]) -> str:
    """A vector as pgvector's text input ('[1,2.5,...]')."""
    return "[" + ",".join(format(float(x), ".9g") for x in vector) + "]"


def pgvector_on(db: BaseDatabaseWrapper | None = None) -> bool:
    """Whether the passages' vectors are in pgvector's column on this database (asked once per process)."""
    db = db or connection
    if db.vendor != "postgresql":
        return False
    if db.alias not in _enabled:
        _enabled[db.alias] = _has_column(db)
    return _enabled[db.alias]


def forget() -> None:
    """Ask the database again next time (after a migration or `pgvector_enable`)."""
    _enabled.clear()


def _has_column(db: BaseDatabaseWrapper) -> bool:
    with db.cursor() as cursor:
        cursor.execute(
            "SELECT 1 FROM information_schema.columns "
            "WHERE table_schema = current_schema() AND table_name = 'files_passage' AND column_name = 'vector'"
        )
        return cursor.fetchone() is not None


def pgvector_enable(db: BaseDatabaseWrapper | None = None) -> bool:
    """On PostgreSQL whose server has pgvector: create the extension (where the role may), add the
    column and fill it from the stored bytes. True when the vectors are then in pgvector. A role that
    may not create the extension is told once in the log: a superuser runs `CREATE EXTENSION vector`
    in the database, and the next start takes it up."""
    db = db or connection
    if db.vendor != "postgresql":
        return False
    forget()
    if _has_column(db):
        _enabled[db.alias] = True
        return True
    with db.cursor() as cursor:
        cursor.execute("SELECT 1 FROM pg_available_extensions WHERE name = 'vector'")
        if cursor.fetchone() is None:
            return False
        try:
            with transaction.atomic(using=db.alias):  # a savepoint: a refusal leaves the transaction usable
                cursor.execute("CREATE EXTENSION IF NOT EXISTS vector")
        except DatabaseError as exc:
            logger.warning(
                "pgvector is installed on the server but the extension could not be created (%s); "
                "the knowledge search ranks vectors with numpy until a superuser runs CREATE EXTENSION vector",
                " ".join(str(exc).split()),
                extra={"event": "knowledge.pgvector_unavailable"},
            )
            return False
        cursor.execute("ALTER TABLE files_passage ADD COLUMN IF NOT EXISTS vector vector")
    filled = _fill(db)
    _enabled[db.alias] = True
    logger.info("Knowledge vectors moved to pgvector (%d passages)", filled, extra={"event": "knowledge.pgvector"})
    return True


def _fill(db: BaseDatabaseWrapper, batch: int = 500) -> int:
    """The column from the bytes, for the passages that have a vector."""
    import numpy as np

    done = 0
    with db.cursor() as cursor:
        while True:
            cursor.execute(
                "SELECT id, embedding FROM files_passage "
                "WHERE octet_length(embedding) > 0 AND vector IS NULL ORDER BY id LIMIT %s",
                [batch],
            )
            rows = cursor.fetchall()
            if not rows:
                return done
            for passage_id, blob in rows:
                cursor.execute(
                    "UPDATE files_passage SET vector = %s::vector WHERE id = %s",
                    [literal(np.frombuffer(bytes(blob), dtype=np.float32)), passage_id],
                )
            done += len(rows)


def store(passage_id: str, vector: list[float]) -> None:
    """A passage's vector into pgvector's column (its bytes are written by the caller)."""
    with connection.cursor() as cursor:
        cursor.execute("UPDATE files_passage SET vector = %s::vector WHERE id = %s", [literal(vector), passage_id])


def nearest(project_ids: list[str], model_key: str, query_vector: list[float], limit: int) -> list[str]:
    """The passage ids of the projects nearest the query's vector (cosine), best first, by pgvector."""
    with connection.cursor() as cursor:
        cursor.execute(NEAREST_SQL, [project_ids, model_key, literal(query_vector), limit])
        rows: list[Any] = cursor.fetchall()
    return [row[0] for row in rows]
