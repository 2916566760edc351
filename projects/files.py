"""A project's files: upload, list and delete, for the project's members only (docs/workspace.md#projects).

The same pipeline, limits, sniffing, storage and quota as a session's files (files/services.py
`file_upload`): the file is stored once, belongs to the project (`SessionFile.project`, no session) and
every session of the project reads it (files/project_files.py). Anyone who is not a member gets
ProjectNotFoundError, as for a project that does not exist; a file of another project, or a session's,
is SessionFile.DoesNotExist. Uploads and deletions are FileAudit rows with the project's id; each is
announced on projects/signals.py once committed (the knowledge index hooks there)."""

from __future__ import annotations

from typing import Any

from django.db import transaction

from files.models import SessionFile
from files.project_files import project_file_find, project_files
from files.services import file_remove, file_upload

from .models import Project
from .services import ProjectNotFoundError, project_member
from .signals import project_file_added, project_file_removed

__all__ = ["project_file_delete", "project_file_get", "project_file_list", "project_file_upload"]


def _member_first(user: Any, project: Project) -> None:
    if project is None or not project_member(user, project) or project.archived_at is not None:
        raise ProjectNotFoundError(getattr(project, "pk", None))


def project_file_upload(*, user: Any, project: Project, uploaded: Any) -> SessionFile:
    """Store and ingest `uploaded` as the project's, uploaded by `user` (their quota). ProjectNotFoundError
    for a non-member; FileRefused (413, 415, 422) as for a session's upload."""
    _member_first(user, project)
    stored = file_upload(owner=user, uploaded=uploaded, project=project)
    transaction.on_commit(
        lambda: project_file_added.send(sender=Project, project=project, project_id=project.pk, file=stored)
    )
    return stored


def project_file_list(*, user: Any, project: Project) -> list[SessionFile]:
    """The project's live files, oldest first, each with its uploader (`owner`)."""
    _member_first(user, project)
    return project_files(project.pk)


def project_file_get(*, user: Any, project: Project, file_id: Any) -> SessionFile:
    """The project's live file `file_id` (DoesNotExist for any other id)."""
    _member_first(user, project)
    return project_file_find(project.pk, file_id)


def project_file_delete(*, user: Any, project: Project, file_id: Any) -> SessionFile:
    """Delete the project's file for every session of it: its content goes, its row stays (soft-deleted)
    for the audit and for the sessions' pages, which say it is gone. Any member may delete."""
    upload = project_file_get(user=user, project=project, file_id=file_id)
    removed = file_remove(upload, actor=user)
    transaction.on_commit(
        lambda: project_file_removed.send(sender=Project, project=project, project_id=project.pk, file=removed)
    )
    return removed
