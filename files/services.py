"""The files services: the only code that creates, attaches, deletes and purges SessionFile rows,
and the one way to read one (`file_get`: the owner's file or DoesNotExist, so anyone else's id is a
404 everywhere). Every upload, delete and purge writes a FileAudit row."""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import IO, Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import transaction
from django.db.models import BooleanField, Exists, ExpressionWrapper, Q, QuerySet, Sum
from django.utils import timezone

from aptix.ids import HEX_ID, new_hex_id

from . import storage
from .errors import FileRefused, size_text, too_large
from .ingest import ingest
from .models import FileAudit, SessionFile
from .search import forget
from .sniff import sniff

__all__ = [
    "FileRefused",
    "file_delete",
    "file_describe",
    "file_get",
    "file_open",
    "file_remove",
    "file_thumbnail_open",
    "file_upload",
    "files_attach",
    "project_files_purge",
    "session_files",
    "session_files_purge",
    "session_has_files",
    "table_describe",
]

CHUNK = 1 << 20
NAME_CHARS = 255


def file_upload(*, owner: Any, uploaded: Any, session: Any = None, project: Any = None) -> SessionFile:
    """Store and ingest an uploaded file (a Django UploadedFile or File: streamed, never read whole)
    for `owner`, attached to `session` when given (`owner`'s own session, else DoesNotExist), or
    given to `project` (the caller, projects/files.py, checked that `owner` is one of its members).
    FileRefused: 413 too large or over the quota, 415 not a kind we take, 422 unreadable."""
    if session is not None and project is not None:
        raise ValueError("A file belongs to a session or to a project, not both.")
    if session is not None and getattr(session, "user_id", None) != owner.pk:
        raise SessionFile.DoesNotExist("No such session.")  # files are the session owner's alone
    name = clean_name(getattr(uploaded, "name", "") or "upload")
    size = uploaded.size if uploaded.size is not None else None
    limit = settings.APTIX_UPLOAD_MAX_BYTES
    if size is not None and size > limit:
        raise too_large(limit)
    workdir = Path(tempfile.mkdtemp(prefix="aptix-upload-"))
    stored: list[str] = []
    try:
        path, size, sha256 = _local_copy(uploaded, workdir)
        if size > limit:
            raise too_large(limit)
        _check_quota(owner, size)
        sniffed = sniff(path, name)
        ingested = ingest(path, sniffed, name, workdir)
        file_id = new_hex_id()
        base = storage.base_name(owner.pk, file_id)
        stored.append(storage.save(f"{base}/original", path))
        data_name = ""
        if ingested.data_path is not None:
            data_name = storage.save(f"{base}/{ingested.data_suffix}", ingested.data_path)
            stored.append(data_name)
        with transaction.atomic():
            # Checked again holding the owner's row (SQLite's IMMEDIATE transactions hold the write
            # lock): uploads at once, from any process, are counted one after the other, not each
            # against the total before the others (the check above only spares a hopeless ingest).
            get_user_model().objects.select_for_update().only("pk").get(pk=owner.pk)
            _check_quota(owner, size)
            upload = SessionFile(
                id=file_id,
                owner=owner,
                name=name,
                kind=sniffed.kind,
                format=sniffed.format,
                size=size,
                sha256=sha256,
                storage_name=stored[0],
                data_name=data_name,
                tables=ingested.tables,
                pages=ingested.pages,
                preview=ingested.preview,
            )
            if session is not None:
                _attach(upload, session)
            elif project is not None:
                _give_to_project(upload, project)
            upload.save(force_insert=True)
            _audit(FileAudit.Action.UPLOAD, upload, actor=owner)
        stored.clear()  # the row names them now
        return upload
    finally:
        for name_stored in stored:  # refused or failed after storing: leave nothing behind
            storage.delete(name_stored)
        shutil.rmtree(workdir, ignore_errors=True)


def file_get(user: Any, file_id: str) -> SessionFile:
    """`user`'s live file `file_id`; SessionFile.DoesNotExist for any other (someone else's, deleted,
    a malformed id): callers answer 404 without saying which."""
    if not isinstance(file_id, str) or not HEX_ID.fullmatch(file_id) or not getattr(user, "pk", None):
        raise SessionFile.DoesNotExist("No such file.")
    # A project's file is the project's members' (projects/files.py), not its uploader's alone.
    return SessionFile.objects.get(pk=file_id, owner_id=user.pk, project__isnull=True, deleted_at__isnull=True)


def file_in_session_get(file_id: str) -> SessionFile:
    """The live file `file_id` that belongs to a session (DoesNotExist otherwise): for a reader of a
    session shared with their team. The caller checks that the user may read `session_id` first."""
    if not isinstance(file_id, str) or not HEX_ID.fullmatch(file_id):
        raise SessionFile.DoesNotExist("No such file.")
    return SessionFile.objects.get(pk=file_id, session__isnull=False, deleted_at__isnull=True)


def file_delete(user: Any, file_id: str) -> SessionFile:
    """Delete `user`'s file: its content (original, tables, text) goes; the row stays for the audit."""
    with transaction.atomic():
        upload = SessionFile.objects.select_for_update().get(pk=file_get(user, file_id).pk)
        _drop_content(upload)
        _audit(FileAudit.Action.DELETE, upload, actor=user)
    return upload


def file_remove(upload: SessionFile, *, actor: Any) -> SessionFile:
    """Delete a file the caller found through its own check (a project's file, projects/files.py):
    as file_delete, its content goes, the row stays for the audit."""
    with transaction.atomic():
        upload = SessionFile.objects.select_for_update().get(pk=upload.pk, deleted_at__isnull=True)
        _drop_content(upload)
        _audit(FileAudit.Action.DELETE, upload, actor=actor)
    return upload


def project_files_purge(project_id: str, *, actor: Any = None) -> list[SessionFile]:
    """The project is being deleted: its live files' content goes (each a purge row in the audit, with
    the project's id), and every file of it, live or deleted, is let go of the project (the rows stay
    for the audit). Returns the files purged."""
    purged = list(SessionFile.objects.filter(project_id=project_id, deleted_at__isnull=True))
    for upload in purged:
        _drop_content(upload)
        _audit(FileAudit.Action.PURGE, upload, actor=actor)
    SessionFile.objects.filter(project_id=project_id).update(project=None)
    return purged


def files_attach(user: Any, file_ids: Iterable[str], session: Any) -> list[SessionFile]:
    """Attach `user`'s files to `session` (theirs too), in the order given. DoesNotExist, naming no
    file, when any id is not a live file of `user`'s or is attached to another session already."""
    ids = list(dict.fromkeys(file_ids))
    if not ids:
        return []
    if getattr(session, "user_id", None) != user.pk or any(not HEX_ID.fullmatch(str(i)) for i in ids):
        raise SessionFile.DoesNotExist("No such file.")
    with transaction.atomic():
        found = {
            f.pk: f
            for f in SessionFile.objects.select_for_update().filter(
                pk__in=ids, owner_id=user.pk, project__isnull=True, deleted_at__isnull=True
            )
        }
        if len(found) != len(ids) or any(f.session_id not in (None, session.pk) for f in found.values()):
            raise SessionFile.DoesNotExist("No such file.")
        for upload in found.values():
            if upload.session_id is None:
                _attach(upload, session)
                upload.save(update_fields=["session", "attached_at", "tables"])
    return [found[i] for i in ids]


def session_files(session_id: str) -> list[SessionFile]:
    """The session's live files, oldest first (the caller checked who may see the session)."""
    return list(SessionFile.objects.filter(session_id=session_id, deleted_at__isnull=True).order_by("created_at", "id"))


def session_has_files(session_id: str | None) -> bool:
    """Whether the session has live files of its own or its project has (the files tools are offered then)."""
    return bool(session_id) and (_live_files(session_id).exists() or _live_project_files(session_id).exists())


def session_files_exist(session: Any) -> ExpressionWrapper:
    """`session_has_files` as an expression (`session`: an OuterRef), to annotate another query with."""
    either = Q(Exists(_live_files(session))) | Q(Exists(_live_project_files(session)))
    return ExpressionWrapper(either, output_field=BooleanField())


def _live_project_files(session: Any) -> QuerySet[SessionFile]:
    return SessionFile.objects.filter(project__sessions__id=session, deleted_at__isnull=True)


def _live_files(session: Any) -> QuerySet[SessionFile]:
    return SessionFile.objects.filter(session_id=session, deleted_at__isnull=True)


def session_files_purge(session_id: str, *, actor: Any = None) -> int:
    """The session was deleted: its files' content goes (their rows stay for the audit). Returns how
    many files were purged."""
    purged = 0
    for upload in SessionFile.objects.filter(session_id=session_id, deleted_at__isnull=True):
        with transaction.atomic():
            _drop_content(upload)
            _audit(FileAudit.Action.PURGE, upload, actor=actor)
        purged += 1
    return purged


def file_describe(upload: SessionFile) -> dict[str, Any]:
    """The file as the API shows it."""
    return {
        "fileId": upload.pk,
        "name": upload.name,
        "kind": upload.kind,
        "size": upload.size,
        "sha256": upload.sha256,
        "tables": [table_describe(t) for t in upload.tables],
        "pages": upload.pages,
        **({"pageUnit": upload.page_unit} if upload.kind == "document" else {}),
    }


def table_describe(table: dict[str, Any]) -> dict[str, Any]:
    """A table as the API and files_list show it: name, columns, rows, and how a semicolon-separated
    file's numbers were read (`decimal`)."""
    described = {
        "name": table["name"],
        "columns": [{"name": c["name"], "type": c["type"]} for c in table["columns"]],
        "rows": table["rows"],
    }
    if table.get("decimal"):
        described["decimal"] = table["decimal"]
    return described


def file_open(upload: SessionFile) -> IO[bytes]:
    """The file as uploaded, for a download (the caller got `upload` through file_get)."""
    return storage.open_stored(upload.storage_name)


def file_thumbnail_open(upload: SessionFile) -> IO[bytes] | None:
    """An image's PNG thumbnail (None for other kinds)."""
    if upload.kind != SessionFile.Kind.IMAGE or not upload.data_name:
        return None
    return storage.open_stored(upload.data_name)


# --- helpers ------------------------------------------------------------------------------------


def clean_name(name: str) -> str:
    """The file's name without any path and control characters, at most NAME_CHARS long."""
    base = os.path.basename(str(name).replace("\\", "/"))
    base = "".join(ch for ch in base if ch.isprintable()).strip() or "upload"
    if len(base) <= NAME_CHARS:
        return base
    stem, dot, extension = base.rpartition(".")
    return (
        (stem[: NAME_CHARS - len(extension) - 1] + dot + extension)
        if dot and len(extension) < 16
        else base[:NAME_CHARS]
    )


def _local_copy(uploaded: Any, workdir: Path) -> tuple[str, int, str]:
    """(a local path to the upload, its size, its sha256), streaming: the upload handler's temporary
    file as it is, anything else copied chunk by chunk and stopped past the limit."""
    digest = hashlib.sha256()
    temporary = getattr(uploaded, "temporary_file_path", None)
    if temporary is not None:
        path = temporary()
        size = 0
        with open(path, "rb") as handle:
            while chunk := handle.read(CHUNK):
                digest.update(chunk)
                size += len(chunk)
        return path, size, digest.hexdigest()
    path = str(workdir / "upload")
    size = 0
    limit = settings.APTIX_UPLOAD_MAX_BYTES
    if hasattr(uploaded, "seek"):
        uploaded.seek(0)
    with open(path, "wb") as out:
        for chunk in uploaded.chunks(CHUNK):
            size += len(chunk)
            if size > limit:
                raise too_large(limit)
            digest.update(chunk)
            out.write(chunk)
    return path, size, digest.hexdigest()


def _check_quota(owner: Any, size: int) -> None:
    quota = settings.APTIX_UPLOAD_USER_QUOTA
    used = SessionFile.objects.filter(owner_id=owner.pk, deleted_at__isnull=True).aggregate(total=Sum("size"))["total"]
    used = used or 0
    if used + size > quota:
        raise FileRefused(
            413,
            f"This file ({size_text(size)}) would take your files past your storage quota of {size_text(quota)} "
            f"(you use {size_text(used)}); delete files you no longer need.",
        )


def _attach(upload: SessionFile, session: Any) -> None:
    """Make `upload` the session's, its tables renamed where another of the session's files, or a
    file of the session's project, took the name (sales, sales_2, …): see `project_tables_taken`."""
    live = SessionFile.objects.filter(deleted_at__isnull=True).exclude(pk=upload.pk)
    taken = _table_names(live.filter(session_id=session.pk))
    if getattr(session, "project_id", None):
        taken |= _table_names(live.filter(project_id=session.project_id))
    upload.tables = unique_tables(upload.tables, taken)
    upload.session = session
    upload.attached_at = timezone.now()


def _give_to_project(upload: SessionFile, project: Any) -> None:
    """Make `upload` the project's, its tables named apart from every live table of the project and of
    the sessions in it: so the name the upload answers is the one files_query takes in each session."""
    live = SessionFile.objects.filter(deleted_at__isnull=True).exclude(pk=upload.pk)
    taken = _table_names(live.filter(project_id=project.pk)) | _table_names(live.filter(session__project_id=project.pk))
    upload.tables = unique_tables(upload.tables, taken)
    upload.project = project
    upload.attached_at = timezone.now()


def _table_names(files: QuerySet[SessionFile]) -> set[str]:
    return {table["name"] for tables in files.values_list("tables", flat=True) for table in tables or []}


def unique_tables(tables: list[dict[str, Any]], taken: set[str]) -> list[dict[str, Any]]:
    """`tables` renamed where `taken` (updated) has the name: sales, sales_2, sales_3, …"""
    renamed = []
    for table in tables:
        name, n = table["name"], 1
        while name in taken:
            n += 1
            name = f"{table['name']}_{n}"
        taken.add(name)
        renamed.append({**table, "name": name})
    return renamed


def _drop_content(upload: SessionFile) -> None:
    for name in (upload.storage_name, upload.data_name):
        storage.delete(name)
    forget(upload.data_name)  # a document's passages kept by this process
    upload.deleted_at = timezone.now()
    upload.save(update_fields=["deleted_at"])


def _audit(action: str, upload: SessionFile, *, actor: Any) -> None:
    FileAudit.objects.create(
        action=action,
        actor=actor if getattr(actor, "pk", None) else None,
        actor_name=getattr(actor, "username", "") or "",
        file_id=upload.pk,
        name=upload.name,
        size=upload.size,
        sha256=upload.sha256,
        session_id=upload.session_id or "",
        project_id=upload.project_id or "",
    )
