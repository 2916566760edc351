"""Ingestion by kind: what a table, a document or an image becomes once uploaded (files/services.py
calls `ingest`). Each upload is read in a child process within a memory and a time limit
(isolation.py, child.py), which runs `ingest_here` (readers.py); what it writes is never changed after."""

from __future__ import annotations

from pathlib import Path

from ..sniff import Sniffed
from .ingested import Ingested
from .readers import ingest_here

__all__ = ["Ingested", "ingest", "ingest_here"]


def ingest(path: str, sniffed: Sniffed, name: str, workdir: Path) -> Ingested:
    """Ingest the upload at `path` (found to be `sniffed`) into files under `workdir`, in a child
    process: FileRefused for what its readers refuse, and 422 when it runs out of memory or time."""
    from .isolation import ingest_in_child

    return ingest_in_child(path, sniffed, name, workdir)
