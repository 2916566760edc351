"""A project's files as its sessions see them (docs/workspace.md#projects).

A project's file (`SessionFile.project` set, `session` NULL) is stored once and read by every session
of the project whose user is a member of it. files never imports projects: the project is reached by
the foreign keys' names, and membership is the one rule projects/services.py states (a member of the
project's team and, unless the project is the whole team's, one of its chosen members).

Table names. A project's tables are named apart from every live table of the project and of the
sessions in it when uploaded, and a session's own upload is named apart from its project's tables
(files/services.py `_give_to_project`, `_attach`): so the `tables[].name` an upload answers is the name
files_query takes. Only a session moved into a project afterwards can hold a name its project also
has: there the session's own table keeps the name (its earlier answers used it) and the project's is
seen under the next free suffix (sales_2, …), as files_list shows it."""

from __future__ import annotations

from typing import Any

from django.db.models import F, Q, QuerySet

from aptix.ids import HEX_ID
from aptix.models import Membership

from .models import SessionFile
from .services import session_files, unique_tables


def member_of_project_q(user_id: Any, prefix: str = "project__") -> Q:
    """Rows whose project (`prefix`) `user_id` is a member of."""
    teams = Membership.objects.filter(user_id=user_id).values("team_id")
    return Q(**{f"{prefix}team_id__in": teams}) & (
        Q(**{f"{prefix}whole_team": True}) | Q(**{f"{prefix}members": user_id})
    )


def project_files(project_id: str) -> list[SessionFile]:
    """The project's live files, oldest first (the caller checked that the user is a member)."""
    return list(_project_live(project_id).select_related("owner"))


def project_file_find(project_id: str, file_id: Any) -> SessionFile:
    """The project's live file `file_id`, or DoesNotExist (another project's, a session's, deleted, malformed)."""
    if not isinstance(file_id, str) or not HEX_ID.fullmatch(file_id):
        raise SessionFile.DoesNotExist("No such file.")
    return _project_live(project_id).get(pk=file_id)


def _project_live(project_id: str) -> QuerySet[SessionFile]:
    return SessionFile.objects.filter(project_id=project_id, deleted_at__isnull=True).order_by("created_at", "id")


def session_project_files(session_id: str, user_id: Any) -> list[SessionFile]:
    """The live files of the session's project, if `user_id` is a member of it; none otherwise."""
    if not session_id or user_id is None:
        return []
    found = (
        SessionFile.objects.filter(project__sessions__id=session_id, deleted_at__isnull=True)
        .filter(member_of_project_q(user_id))
        .distinct()
        .order_by("created_at", "id")
    )
    return list(found)


def session_project_files_named(session_id: str, user_id: Any) -> list[SessionFile]:
    """`session_project_files`, each table under the name the session's queries use (the session's own
    files keep theirs: the module's docstring), for the session's Files panel."""
    taken = {table["name"] for upload in session_files(session_id) for table in upload.tables}
    shared = session_project_files(session_id, user_id)
    for upload in shared:
        upload.tables = unique_tables(upload.tables, taken)
    return shared


def session_visible_files(session_id: str, user_id: Any) -> list[SessionFile]:
    """What the files tools see in a session for its user: the session's own files (theirs), then its
    project's (each with `from_project` True), the project's tables renamed in memory where one of
    the session's own has the name (the module's docstring)."""
    own = [f for f in session_files(session_id) if f.owner_id == user_id]
    for upload in own:
        upload.from_project = False  # type: ignore[attr-defined]
    shared = session_project_files(session_id, user_id)
    taken = {table["name"] for upload in own for table in upload.tables}
    for upload in shared:
        upload.tables = unique_tables(upload.tables, taken)
        upload.from_project = True  # type: ignore[attr-defined]
    return own + shared


def session_deleted_project_tables(session_id: str, user_id: Any) -> dict[str, SessionFile]:
    """Table name → the deleted file of the session's project it was in (the newest such file), for a
    clear error when a query names a table that went with its file."""
    if not session_id or user_id is None:
        return {}
    gone = (
        SessionFile.objects.filter(project__sessions__id=session_id, deleted_at__isnull=False)
        .filter(member_of_project_q(user_id))
        .distinct()
        .order_by("deleted_at", "id")
    )
    return {table["name"]: upload for upload in gone for table in upload.tables}


def session_deleted_project_files(session_id: str, user_id: Any) -> list[SessionFile]:
    """The files of the session's project deleted since the session began, newest first, if `user_id`
    is a member of the project: the session's page says they are gone."""
    if not session_id or user_id is None:
        return []
    return list(
        SessionFile.objects.filter(
            project__sessions__id=session_id,
            deleted_at__gte=F("project__sessions__created_at"),
        )
        .filter(member_of_project_q(user_id))
        .distinct()
        .order_by("-deleted_at", "-id")
    )
