"""The session manager (IAgentSessionManager): creating sessions and the single write path of
`AgentSession.mode` (TUL-009 §2, AGN-011 §3.2); the owner's housekeeping (rename, pin, archive,
delete). Callers authorise first: `session_get` is the user's own session or SessionNotFoundError."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, TypedDict, Unpack

from asgiref.sync import sync_to_async
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.db.models import Exists, OuterRef, QuerySet
from django.utils import timezone

from aptix.models import Membership
from files.services import session_files_purge
from modes.catalog import ModeValidationError, default_mode_for_team, mode_usable, mode_validate, normalize_mode_key
from modes.models import ModeHistory, ModeVersion
from projects.models import Project
from projects.services import project_member

from .documents.services import documents_purge
from .llm.catalog import models_config
from .models import AgentSession, Execution, Turn

logger = logging.getLogger("aptix.sessions")

ERROR_BAD_EXECUTION = "Execution must be 'ask' or 'agent'."
TITLE_MAX = 200
ERROR_TITLE_EMPTY = "Give the session a title."
ERROR_TITLE_TOO_LONG = f"A title has at most {TITLE_MAX} characters."
CODE_NO_PROJECT = "no_project"  # the API answers 404: someone else's project is as good as none
ERROR_SESSION_BUSY = "A turn of this session is still running: stop it before deleting the session."


ERROR_READ_ONLY = (
    "This session is shared with you to read: only its author can change it. "
    "Use “Continue as my copy” to work on it as your own."
)


class SessionNotFoundError(LookupError):
    """No session with this id for this team and user."""


class SessionReadOnlyError(PermissionDenied):
    """The session is shared with the user's team: they may read it, not change it (a 403 with
    ERROR_READ_ONLY; a PermissionDenied, so a view that lets it through answers 403 too)."""

    def __init__(self, session_id: str = "") -> None:
        super().__init__(ERROR_READ_ONLY)
        self.session_id = session_id


def session_create(
    *,
    team,
    user,
    mode: str | None = None,
    execution: str = "ask",
    title: str = "",
    project: Project | None = None,
    origin: str = "",
) -> AgentSession:
    """Create a session in `mode` or, when the caller names none, the project's default mode (in a
    `project` that has one the team may still use), else the team's default mode, else the catalog's
    (AGN-011 §3.1: the caller's mode wins, then the project's, the team's default, the catalog's). A
    mode the team cannot use is refused as an unknown one; a project the user is not a member of, or
    of another team, as an unknown project.

    `origin` says where a session a program began came from ("via MCP: VS Code"), for the sidebar.

    Callers authorise first: views and the API only offer the user's own teams."""
    if execution not in Execution.values:
        raise ValidationError({"execution": ERROR_BAD_EXECUTION})
    if project is not None:
        _check_project(project=project, team=team, user=user)
    if (mode is None or not str(mode).strip()) and project is not None and project.default_mode:
        mode = project.default_mode if mode_usable(project.default_mode, team) else None
    if mode is None or not str(mode).strip():
        key = default_mode_for_team(team)
    else:
        try:
            key = mode_validate(mode, team=team).key
        except ModeValidationError as exc:
            raise ValidationError({"mode": str(exc)}) from exc
    session = AgentSession(
        team=team,
        user=user,
        mode=key,
        execution=execution,
        title=title.strip()[:200],
        project=project,
        origin=origin[: AgentSession._meta.get_field("origin").max_length],
    )
    session.full_clean()
    session.save()
    return session


ERROR_NO_PROJECT = "No project with this id in your projects."
ERROR_PROJECT_OTHER_TEAM = "The project belongs to another team than the session."


def _check_project(*, project: Project, team, user) -> None:
    """`project` is one of `user`'s (project_member) and of `team`, else a ValidationError naming it."""
    if not project_member(user, project):
        raise ValidationError({"project": ERROR_NO_PROJECT}, code=CODE_NO_PROJECT)
    if project.team_id != team.pk:
        raise ValidationError({"project": ERROR_PROJECT_OTHER_TEAM})


def session_set_project(*, session: AgentSession, user, project: Project | None) -> AgentSession:
    """Move the session into `project`, or out of any (None: "No project"). Only its owner moves it
    (callers found it with session_get, which refuses a reader), into a project of the session's team
    they are a member of. Its mode stays: a project's default mode is for the sessions started in it."""
    if session.user_id != user.pk:
        raise SessionReadOnlyError(session.pk)
    if project is not None:
        _check_project(project=project, team=session.team, user=user)
    session.project = project
    session.save(update_fields=["project"])  # no activity in it: the sidebar keeps its order
    return session


ERROR_TRY_NEEDS_TEAM = "Trying a draft opens a session in one of your teams: you are a member of none."


def session_try_draft(*, user, version: ModeVersion) -> AgentSession:
    """A "Try it" session of a mode's draft (modes/versions.py), for its curator only: it is in the
    draft's mode and its turns run on the draft's fields (agents/run/loading.py), whatever the
    published version is; everyone else's sessions keep the published one. In the user's first team."""
    membership = Membership.objects.filter(user=user).select_related("team").order_by("pk").first()
    if membership is None:
        raise ValidationError(ERROR_TRY_NEEDS_TEAM)
    session = AgentSession(
        team=membership.team,
        user=user,
        mode=version.mode.key,
        mode_draft=version,
        title=f"Trying {version.mode.display_name} draft v{version.number}",
    )
    session.full_clean()
    session.save()
    return session


def session_set_execution(*, session: AgentSession, execution: str) -> AgentSession:
    """Ask / Agent for the session's next turns (spec 004 §5.2: each turn selects its tools afresh)."""
    if execution not in Execution.values:
        raise ValidationError({"execution": ERROR_BAD_EXECUTION})
    session.execution = execution
    session.save(update_fields=["execution", "updated_at"])
    return session


def session_toggle_tool(*, session: AgentSession, name: str, enabled: bool) -> AgentSession:
    """Switch one tool, or a whole MCP server, on or off for the session's next turns (callers
    check that `name` is one the session's tool panel lists)."""
    toggles = dict(session.tool_toggles or {})
    if enabled:
        toggles.pop(name, None)
    else:
        toggles[name] = False
    session.tool_toggles = toggles
    session.save(update_fields=["tool_toggles", "updated_at"])
    return session


def session_set_model(*, session: AgentSession, model: str) -> AgentSession:
    """The user's pick of a model for this session's next turns ("" goes back to the mode's)."""

    config = models_config()
    model = (model or "").strip()
    if model and config.get(model) is None:
        raise ValidationError({"model": f"Unknown model {model!r}. Available: {', '.join(config.models)}."})
    session.model = model
    session.save(update_fields=["model", "updated_at"])
    return session


def session_list(*, user) -> QuerySet[AgentSession]:
    """The user's own sessions in teams they still belong to, not deleted, newest first (archived ones
    included: they leave the sidebar, not the user's reach). A catalog test run's sessions are nobody's
    to see: they are left out here, and so of every page, search and API call."""
    return (
        _own(user)
        .select_related("team")
        .annotate(
            waiting_flag=Exists(Turn.objects.filter(session=OuterRef("pk"), status=Turn.Status.AWAITING_APPROVAL))
        )
        .order_by("-updated_at")
    )


def _own(user: Any) -> QuerySet[AgentSession]:
    """The user's own sessions in teams they still belong to, not deleted, no catalog test's."""
    return AgentSession.objects.filter(
        user=user, team__memberships__user=user, deleted_at__isnull=True, catalog_test=False
    )


def session_rename(*, session: AgentSession, title: str) -> AgentSession:
    """A new title (trimmed; required, at most TITLE_MAX characters)."""
    title = (title or "").strip()
    if not title:
        raise ValidationError({"title": ERROR_TITLE_EMPTY})
    if len(title) > TITLE_MAX:
        raise ValidationError({"title": ERROR_TITLE_TOO_LONG})
    session.title = title
    session.save(update_fields=["title", "updated_at"])
    return session


def session_title_generated(*, session_id: str, was: str, title: str) -> str:
    """A generated title (agents/run/titles.py), written only if the title is still `was` (the one the
    first message gave it): a name the user chose meanwhile is never overwritten. Not `updated_at`:
    naming a session is no activity in it. The title as written (spaces folded, cut), or "" if none was."""
    title = " ".join((title or "").split())[:TITLE_MAX]
    if not title or not AgentSession.objects.filter(pk=session_id, title=was).update(title=title):
        return ""
    return title


def session_pin(*, session: AgentSession, pinned: bool) -> AgentSession:
    """Pin to the top of the sidebar, or unpin. Does not touch `updated_at` (no reordering)."""
    session.pinned_at = (session.pinned_at or timezone.now()) if pinned else None
    session.save(update_fields=["pinned_at"])
    return session


def session_archive(*, session: AgentSession, archived: bool) -> AgentSession:
    """Out of the sidebar's list (still readable, listed under "Archived"), or back into it."""
    session.archived_at = (session.archived_at or timezone.now()) if archived else None
    session.save(update_fields=["archived_at"])
    return session


def session_delete(*, session: AgentSession) -> None:
    """Delete for the user: soft, so the audit trail (ModeHistory, which PROTECTs its session, tool
    approvals, turns) stays whole for auditors; the session's documents are purged. Refused while a
    turn runs (stop it first); a turn that waits for an approval holds nothing and is left as it is."""
    with transaction.atomic():
        locked = AgentSession.objects.select_for_update().get(pk=session.pk)  # turn_start locks it too
        running = locked.turns.filter(finished_at__isnull=True).exclude(status__in=Turn.PAUSED_STATUSES)
        if running.exists():
            raise ValidationError(ERROR_SESSION_BUSY, code="busy")
        locked.deleted_at = timezone.now()
        locked.save(update_fields=["deleted_at"])
        documents_purge(session_id=locked.pk)  # the drafts go with the session (the audit keeps turns)
    session.deleted_at = locked.deleted_at
    # Its uploaded files' content goes with it (their rows stay, with the audit of the purge).
    session_files_purge(session.pk, actor=session.user)


def session_shared_list(*, user) -> QuerySet[AgentSession]:
    """The sessions teammates shared with the user's team (not the user's own): in a team the user
    still belongs to, by an author who still belongs to it, not deleted; the most recently active first.
    Sharing never crosses teams: the team is the session's own."""
    author_in_team = Membership.objects.filter(team_id=OuterRef("team_id"), user_id=OuterRef("user_id"))
    return (
        AgentSession.objects.filter(shared_at__isnull=False, deleted_at__isnull=True, team__memberships__user=user)
        .exclude(user=user)
        .filter(Exists(author_in_team))
        .select_related("team", "user")
        .order_by("-updated_at")
    )


def session_shares_of(*, team_id, user_id) -> bool:
    """Whether the user has a session shared with the team (its readers lose it when they leave)."""
    return AgentSession.objects.filter(
        team_id=team_id, user_id=user_id, shared_at__isnull=False, deleted_at__isnull=True
    ).exists()


def session_live(*, session_id: str) -> bool:
    """Whether the session exists and is not deleted (whoever's it is)."""
    return AgentSession.objects.filter(pk=session_id, deleted_at__isnull=True).exists()


def session_readable(*, user, session_id: str) -> bool:
    """Whether `user` may read the session: their own (session_list's check) or shared with their team."""
    return (
        session_list(user=user).filter(pk=session_id).exists()
        or session_shared_list(user=user).filter(pk=session_id).exists()
    )


def session_get(*, user, session_id: str, read: bool = False) -> AgentSession:
    """The user's own session, the one access check of every page, socket and API call. A session a
    teammate shared with the user's team is returned for reading (`read=True`, marked `read_only`);
    for anything else it is SessionReadOnlyError (403). Any other id is SessionNotFoundError (404)."""
    # The user's own, as session_list has it, without the sidebar's ordering and waiting flag: every API
    # call and socket asks this (8% of a web process's CPU went to building and compiling the sidebar's
    # query for it: py-spy, bench/scale_out.py); `is_waiting` reads the flag when a page shows it.
    session = _own(user).filter(pk=session_id).select_related("team").first()
    if session is not None:
        return session
    shared = session_shared_list(user=user).filter(pk=session_id).first()
    if shared is None:
        raise SessionNotFoundError(session_id)
    if not read:
        raise SessionReadOnlyError(session_id)
    shared.read_only = True
    return shared


class ModeChangeOptions(TypedDict, total=False):
    """The keyword-only options of `SessionManager.set_session_mode` (DESIGN.md), each optional:
    `branch` (default False), `turn` (a Turn or its id, default None), `tool_call_id` (default None)
    and `source` (a ModeHistory.Source, default "tool")."""

    branch: bool
    turn: Any
    tool_call_id: str | None
    source: str


@dataclass(frozen=True)
class _ModeChange:
    """One set_session_mode call, its arguments checked and normalised."""

    session_id: str
    mode: Any  # as requested
    target: str  # the catalog key it names
    reason: str
    org: Any
    user: Any
    branch: bool
    turn_id: Any
    tool_call_id: str | None
    source: str
    version: int | None = None  # the published version of the target mode

    @property
    def user_id(self) -> Any:
        return getattr(self.user, "id", None)


class SessionManager:
    """IAgentSessionManager. `set_session_mode` is the only code that writes `AgentSession.mode`."""

    def __init__(self, log: logging.Logger | None = None) -> None:
        self._log = log or logger

    async def set_session_mode(
        self, session_id: str, mode: str, reason: str, org: Any, user: Any, **options: Unpack[ModeChangeOptions]
    ) -> tuple[str, str]:
        """Change the session's mode and return `(previous_mode, new_mode)`.

        The mode is normalised (trimmed, lower-cased) and must be an active catalog key, otherwise
        ModeValidationError names the valid keys. The session row is locked for the change, so two
        concurrent changes serialise; each real change writes one ModeHistory row, a change to the
        current mode writes none and still succeeds. `org` and `user`, when given, must own the
        session (SessionNotFoundError otherwise: nothing is written). The keyword-only options
        (branch, turn, tool_call_id, source) are ModeChangeOptions.
        """
        _check_options("set_session_mode", options)
        return await sync_to_async(self.set_session_mode_sync)(session_id, mode, reason, org, user, **options)

    def set_session_mode_sync(
        self, session_id: str, mode: str, reason: str, org: Any, user: Any, **options: Unpack[ModeChangeOptions]
    ) -> tuple[str, str]:
        """set_session_mode, for synchronous callers."""
        change = _prepare_change(session_id, mode, reason, org, user, options=options)
        with transaction.atomic():
            session = _lock_owned_session(change)
            if change.turn_id is not None and not Turn.objects.filter(pk=change.turn_id, session=session).exists():
                change = replace(change, turn_id=None)
            previous = session.mode
            changed = previous != change.target
            if changed:
                _write_change(session, previous, change)
        self._log_change(change, session, previous, changed)
        return previous, change.target

    def _log_change(self, change: _ModeChange, session: AgentSession, previous: str, changed: bool) -> None:
        self._log.info(
            "Session mode %s: %s -> %s",
            ("branched" if change.branch else "changed") if changed else "unchanged",
            previous,
            change.target,
            extra={
                "event": "session.mode_changed" if changed else "session.mode_unchanged",
                "session_id": change.session_id,
                "previous_mode": previous,
                "new_mode": change.target,
                "requested_mode": normalize_mode_key(change.mode),
                "reason": change.reason,
                "branch": change.branch,
                "source": change.source,
                "org_id": session.team_id,
                "org": getattr(change.org, "name", None),
                "user_id": change.user_id if change.user_id is not None else session.user_id,
                "user": getattr(change.user, "username", None),
                "turn_id": change.turn_id,
                "tool_call_id": change.tool_call_id,
            },
        )


def _check_options(name: str, options: Mapping[str, object]) -> None:
    """The TypeError Python raises for a keyword the signature does not name."""
    for key in options:
        if key not in ModeChangeOptions.__optional_keys__:
            raise TypeError(f"{name}() got an unexpected keyword argument {key!r}")


def _prepare_change(
    session_id: str, mode: str, reason: str, org: Any, user: Any, *, options: ModeChangeOptions
) -> _ModeChange:
    """The call checked (source, session id, mode against the catalog) and normalised."""
    _check_options("set_session_mode_sync", options)
    source = options.get("source", ModeHistory.Source.TOOL)
    if source not in ModeHistory.Source.values:
        raise ValueError(f"source must be one of {ModeHistory.Source.values}, not {source!r}.")
    if not session_id:
        raise SessionNotFoundError("The session id is missing.")
    # Against the catalog of the session's team (`org` when given: it must be the session's anyway), so
    # a mode of another team is refused as an unknown one, listing this team's modes.
    team = org if getattr(org, "id", None) is not None else _session_team_id(session_id)
    target = mode_validate(mode, team=team)  # raises ModeValidationError listing the valid keys
    turn = options.get("turn")
    return _ModeChange(
        session_id=session_id,
        mode=mode,
        target=target.key,
        reason=(reason or "").strip(),
        org=org,
        user=user,
        branch=bool(options.get("branch", False)),
        turn_id=getattr(turn, "pk", turn) or None,
        tool_call_id=options.get("tool_call_id"),
        source=source,
        version=target.version or None,
    )


def _session_team_id(session_id: str) -> Any:
    """The session's team id (None for no such session, which the lock then reports)."""
    return AgentSession.objects.filter(pk=session_id).values_list("team_id", flat=True).first()


def _lock_owned_session(change: _ModeChange) -> AgentSession:
    """The session row, locked for the change; SessionNotFoundError unless it exists and `org` and
    `user` (when given) own it. Call inside a transaction."""
    session = AgentSession.objects.select_for_update().filter(pk=change.session_id).first()
    if session is None:
        raise SessionNotFoundError(f"No session {change.session_id!r}.")
    org_id = getattr(change.org, "id", None)
    if (org_id is not None and session.team_id != org_id) or (
        change.user_id is not None and session.user_id != change.user_id
    ):
        # Same answer as a missing session: do not reveal other teams' sessions.
        raise SessionNotFoundError(f"No session {change.session_id!r}.")
    return session


def _write_change(session: AgentSession, previous: str, change: _ModeChange) -> None:
    """The new mode on the session and its ModeHistory row. A branch (the work goes on in a new
    session in that mode, agents/branching.py) leaves this session's mode as it is: its row records
    who asked for the new mode, when and why, with `branch` set."""
    if not change.branch:
        session.mode = change.target
        session.save(update_fields=["mode", "updated_at"])
    ModeHistory.objects.create(
        session=session,
        previous_mode=previous,
        new_mode=change.target,
        reason=change.reason,
        branch=change.branch,
        team_id=session.team_id,
        user_id=change.user_id if change.user_id is not None else session.user_id,
        turn_id=change.turn_id,
        tool_call_id=change.tool_call_id or "",
        source=change.source,
        mode_version=change.version,
    )


session_manager = SessionManager()

SWITCHED_BY_USER = "Switched by the user"


def session_switch_mode(*, session: AgentSession, mode: str, user: Any) -> None:
    """A manual mode switch by the user (the mode badge): through set_session_mode, recorded with
    source "user"; ModeValidationError for a key that is not an active mode."""
    session_manager.set_session_mode_sync(
        session.id, mode, SWITCHED_BY_USER, session.team, user, source=ModeHistory.Source.USER
    )
