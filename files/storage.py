"""Where uploaded files live, through Django's storage API (a local directory under var/media by
default; any storage backend works):

    uploads/<owner id>/<file id>/original     the file as uploaded (downloads serve it)
    uploads/<owner id>/<file id>/tables.duckdb  a table file's tables (written once, never changed)
    uploads/<owner id>/<file id>/pages.json     a document's text by page or section
    uploads/<owner id>/<file id>/thumb.png      an image's thumbnail

The media view (agents/web/views/media.py) serves none of these: downloads go through the files
services, which check the owner.

DuckDB opens a local path. With a local storage that is the stored file itself; with another
(object storage shared by several machines) a process copies the file once into
var/files-cache (settings.FILES_CACHE_DIR) and uses the copy: a stored file never changes, so a copy never goes stale.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from typing import IO

from django.conf import settings
from django.core.files import File
from django.core.files.storage import default_storage


def base_name(owner_id: int, file_id: str) -> str:
    return f"uploads/{owner_id}/{file_id}"


def save(name: str, path: str | Path) -> str:
    """Store the local file at `path` under exactly `name` (an existing object of that name is
    replaced: names carry the file's random id, so only a retry meets one)."""
    if default_storage.exists(name):
        default_storage.delete(name)
    with open(path, "rb") as handle:
        saved = default_storage.save(name, File(handle, name=os.path.basename(name)))
    if saved != name:  # a storage that renamed it: the row must name what is there
        raise RuntimeError(f"the storage saved {name!r} as {saved!r}")
    return saved


def open_stored(name: str) -> IO[bytes]:
    return default_storage.open(name, "rb")


def delete(name: str) -> None:
    if name and default_storage.exists(name):
        default_storage.delete(name)
    cached = _cache_path(name) if name else None
    if cached is not None and cached.exists():
        cached.unlink(missing_ok=True)


def local_path(name: str) -> str:
    """A local path to the stored file `name` for reading (DuckDB, bm25 indexes): the file itself on
    a local storage, else a copy in var/files-cache made on first use."""
    try:
        return default_storage.path(name)
    except NotImplementedError:  # not a local directory: copy once, atomically
        pass
    cached = _cache_path(name)
    if not cached.exists():
        cached.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=cached.parent, prefix=".part-")
        try:
            with os.fdopen(handle, "wb") as out, default_storage.open(name, "rb") as source:
                shutil.copyfileobj(source, out, 1 << 20)
            os.replace(temporary, cached)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise
    return str(cached)


def _cache_path(name: str) -> Path:
    return Path(settings.FILES_CACHE_DIR) / name
