"""Which projects' knowledge a session's turns search (files/knowledge/): one function, so that the
scopes per mode (issue: a mode's catalog entry naming `none`, `project` or a list of projects) change
only this. Whatever a scope says, a project the session's user is not a member of is never searched."""

from __future__ import annotations

from typing import Any

from .services import project_member


def searchable_projects(session: Any) -> list[str]:
    """The ids of the projects the session's knowledge search covers: for now the session's project,
    when its user is a member of it (and it is not archived); none for a session in no project."""
    project = getattr(session, "project", None)
    if project is None or project.archived_at is not None:
        return []
    return [project.pk] if project_member(session.user, project) else []
