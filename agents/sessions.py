"""The session manager (IAgentSessionManager): creating sessions and the single write path of
`AgentSession.mode` (TUL-009 §2, AGN-011 §3.2)."""

from __future__ import annotations

import logging
from typing import Any

from asgiref.sync import sync_to_async
from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import QuerySet

from modes.catalog import ModeValidationError, default_mode_key, mode_validate, normalize_mode_key
from modes.models import ModeHistory

from .models import AgentSession, Execution, Turn

logger = logging.getLogger("aptix.sessions")

ERROR_BAD_EXECUTION = "Execution must be 'ask' or 'agent'."


class SessionNotFoundError(LookupError):
    """No session with this id for this team and user."""


def session_create(*, team, user, mode: str | None = None, execution: str = "ask", title: str = "") -> AgentSession:
    """Create a session in `mode` (validated against the active catalog) or the default mode.

    Callers authorise first: views and the API only offer the user's own teams."""
    if execution not in Execution.values:
        raise ValidationError({"execution": ERROR_BAD_EXECUTION})
    if mode is None or not str(mode).strip():
        key = default_mode_key()
    else:
        try:
            key = mode_validate(mode).key
        except ModeValidationError as exc:
            raise ValidationError({"mode": str(exc)}) from exc
    session = AgentSession(team=team, user=user, mode=key, execution=execution, title=title.strip()[:200])
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


def session_list(*, user) -> QuerySet[AgentSession]:
    """The user's own sessions in teams they still belong to, newest first."""
    return (
        AgentSession.objects.filter(user=user, team__memberships__user=user)
        .select_related("team")
        .order_by("-updated_at")
    )


def session_get(*, user, session_id: str) -> AgentSession:
    session = session_list(user=user).filter(pk=session_id).first()
    if session is None:
        raise SessionNotFoundError(session_id)
    return session


class SessionManager:
    """IAgentSessionManager. `set_session_mode` is the only code that writes `AgentSession.mode`."""

    def __init__(self, log: logging.Logger | None = None) -> None:
        self._log = log or logger

    async def set_session_mode(
        self,
        session_id: str,
        mode: str,
        reason: str,
        org: Any,
        user: Any,
        *,
        branch: bool = False,
        turn: Any = None,
        tool_call_id: str | None = None,
        source: str = ModeHistory.Source.TOOL,
    ) -> tuple[str, str]:
        """Change the session's mode and return `(previous_mode, new_mode)`.

        The mode is normalised (trimmed, lower-cased) and must be an active catalog key, otherwise
        ModeValidationError names the valid keys. The session row is locked for the change, so two
        concurrent changes serialise; each real change writes one ModeHistory row, a change to the
        current mode writes none and still succeeds. `org` and `user`, when given, must own the
        session (SessionNotFoundError otherwise: nothing is written).
        """
        return await sync_to_async(self.set_session_mode_sync)(
            session_id,
            mode,
            reason,
            org,
            user,
            branch=branch,
            turn=turn,
            tool_call_id=tool_call_id,
            source=source,
        )

    def set_session_mode_sync(
        self,
        session_id: str,
        mode: str,
        reason: str,
        org: Any,
        user: Any,
        *,
        branch: bool = False,
        turn: Any = None,
        tool_call_id: str | None = None,
        source: str = ModeHistory.Source.TOOL,
    ) -> tuple[str, str]:
        if source not in ModeHistory.Source.values:
            raise ValueError(f"source must be one of {ModeHistory.Source.values}, not {source!r}.")
        if not session_id:
            raise SessionNotFoundError("The session id is missing.")
        target = mode_validate(mode)  # raises ModeValidationError listing the valid keys
        turn_id = getattr(turn, "pk", turn) or None
        reason = (reason or "").strip()

        with transaction.atomic():
            session = AgentSession.objects.select_for_update().filter(pk=session_id).first()
            if session is None:
                raise SessionNotFoundError(f"No session {session_id!r}.")
            org_id = getattr(org, "id", None)
            user_id = getattr(user, "id", None)
            if (org_id is not None and session.team_id != org_id) or (
                user_id is not None and session.user_id != user_id
            ):
                # Same answer as a missing session: do not reveal other teams' sessions.
                raise SessionNotFoundError(f"No session {session_id!r}.")
            if turn_id is not None and not Turn.objects.filter(pk=turn_id, session=session).exists():
                turn_id = None
            previous = session.mode
            if previous == target.key:
                changed = False
            else:
                session.mode = target.key
                session.save(update_fields=["mode", "updated_at"])
                ModeHistory.objects.create(
                    session=session,
                    previous_mode=previous,
                    new_mode=target.key,
                    reason=reason,
                    branch=bool(branch),
                    team_id=session.team_id,
                    user_id=user_id if user_id is not None else session.user_id,
                    turn_id=turn_id,
                    tool_call_id=tool_call_id or "",
                    source=source,
                )
                changed = True

        self._log.info(
            "Session mode %s: %s -> %s",
            "changed" if changed else "unchanged",
            previous,
            target.key,
            extra={
                "event": "session.mode_changed" if changed else "session.mode_unchanged",
                "session_id": session_id,
                "previous_mode": previous,
                "new_mode": target.key,
                "requested_mode": normalize_mode_key(mode),
                "reason": reason,
                "branch": bool(branch),
                "source": source,
                "org_id": session.team_id,
                "org": getattr(org, "name", None),
                "user_id": user_id if user_id is not None else session.user_id,
                "user": getattr(user, "username", None),
                "turn_id": turn_id,
                "tool_call_id": tool_call_id,
            },
        )
        return previous, target.key


session_manager = SessionManager()
