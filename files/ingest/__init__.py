"""Ingestion by kind: what a table, a document or an image becomes once uploaded (files/services.py
calls `ingest`). Each upload is read in a child process within a memory and a time limit
(isolation.py, child.py), which runs `ingest_here`; what it writes is never changed after."""

from __future__ import annotations

from pathlib import Path

from ..sniff import Sniffed
from .ingested import Ingested

__all__ = ["Ingested", "ingest", "ingest_here"]


def ingest(path: str, sniffed: Sniffed, name: str, workdir: Path) -> Ingested:
    """Ingest the upload at `path` (found to be `sniffed`) into files under `workdir`, in a child
    process: FileRefused for what its readers refuse, and 422 when it runs out of memory or time."""
    from .isolation import ingest_in_child

    return ingest_in_child(path, sniffed, name, workdir)


def ingest_here(path: str, sniffed: Sniffed, name: str, workdir: Path) -> Ingested:
    """Ingest the upload in this process (the child's work: untrusted files are never read in the web
    process)."""
    if sniffed.kind == "table":
        from .tables import ingest_table

        return ingest_table(path, sniffed, name, workdir)
    if sniffed.kind == "document":
        from .documents import ingest_document

        return ingest_document(path, sniffed, workdir)
    from .images import ingest_image

    return ingest_image(path, workdir)
