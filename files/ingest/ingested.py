"""What ingesting one upload made (each kind's module returns one; files/services.py stores it)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class Ingested:
    """What ingestion made: `data_path` (a local file to store as the file's data: DuckDB tables,
    pages JSON or a thumbnail), the tables and pages metadata, and the preview."""

    data_path: Path | None = None
    data_suffix: str = ""
    tables: list[dict] = field(default_factory=list)
    pages: int | None = None
    preview: dict = field(default_factory=dict)
