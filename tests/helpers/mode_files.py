"""Shared by the tests of modes as files (tests/modes/files/): the catalog as plain values, a file
edited as in a text editor, a zip built by hand."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path
from typing import Any

from modes.models import AgentMode

SKIPPED = {"id", "created_at", "updated_at"}


def catalog_snapshot() -> dict[str, dict[str, Any]]:
    """Every mode, field by field (every column but its id and timestamps), with its teams' slugs."""
    snapshot = {}
    for mode in AgentMode.objects.prefetch_related("teams"):
        values = {f.attname: getattr(mode, f.attname) for f in AgentMode._meta.concrete_fields if f.name not in SKIPPED}
        values["teams"] = sorted(team.slug for team in mode.teams.all())
        snapshot[mode.key] = values
    return snapshot


def edit(path: Path, old: str, new: str) -> None:
    """Replace one occurrence of `old` in the file, as a person in an editor would."""
    text = path.read_bytes().decode("utf-8")
    assert text.count(old) == 1, f"{old!r} occurs {text.count(old)} times in {path.name}"
    path.write_bytes(text.replace(old, new).encode("utf-8"))


def zip_of(entries: dict[str, bytes | str]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, data in entries.items():
            archive.writestr(name, data.encode() if isinstance(data, str) else data)
    return buffer.getvalue()
