"""Ingestion by kind: what a table, a document or an image becomes once uploaded (files/services.py
calls `ingest`). Runs in the process that took the upload; what it writes is never changed after."""

from __future__ import annotations

from pathlib import Path

from ..sniff import Sniffed
from .ingested import Ingested

__all__ = ["Ingested", "ingest"]


def ingest(path: str, sniffed: Sniffed, name: str, workdir: Path) -> Ingested:
    """Ingest the upload at `path` (found to be `sniffed`) into files under `workdir`."""
    if sniffed.kind == "table":
        from .tables import ingest_table

        return ingest_table(path, sniffed, name, workdir)
    if sniffed.kind == "document":
        from .documents import ingest_document

        return ingest_document(path, sniffed, workdir)
    from .images import ingest_image

    return ingest_image(path, workdir)
