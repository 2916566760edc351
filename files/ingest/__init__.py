"""Ingestion by kind: what a table, a document or an image becomes once uploaded (files/services.py
calls `ingest`). Runs in the process that took the upload; what it writes is never changed after."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ..sniff import Sniffed


@dataclass
class Ingested:
    """What ingestion made: `data_path` (a local file to store as the file's data: DuckDB tables,
    pages JSON or a thumbnail), the tables and pages metadata, and the preview."""

    data_path: Path | None = None
    data_suffix: str = ""
    tables: list[dict] = field(default_factory=list)
    pages: int | None = None
    preview: dict = field(default_factory=dict)


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
