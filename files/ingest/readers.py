"""Which reader ingests an upload, by its kind: the child process's work (files/ingest/child.py)."""

from __future__ import annotations

from pathlib import Path

from ..sniff import Sniffed
from .ingested import Ingested


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
