"""`session_branch`: "Continue in a new <mode> session" — a child session in the mode a turn's
proposal branched to, linked to its parent, whose first turn carries the request that led to the
proposal. Child and turn are created in one transaction: a failure leaves neither."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction

from modes.models import AgentMode

from .events.payloads import Branch
from .models import AgentSession, Turn
from .sessions import session_create
from .state import EndedState, turn_state
from .turns import turn_start

ERROR_NO_BRANCH = "This turn did not ask for a new session."


def turn_branch(turn: Turn | None) -> Branch | None:
    """The new session a completed turn asked for (its last mode change with `branch`)."""
    if turn is None or turn.status != Turn.Status.COMPLETED:
        return None
    state = turn_state(turn)
    change = state.branch if isinstance(state, EndedState) else None
    return {"mode": change["newMode"], "reason": change["reason"]} if change else None


def branch_child(turn: Turn) -> AgentSession | None:
    """The session a turn's branch already opened. Only a session's newest turn offers its branch, so a
    child created after that turn ended came from it."""
    since = turn.finished_at or turn.created_at
    return turn.session.children.filter(created_at__gte=since).order_by("created_at").first()


def session_branch(*, session: AgentSession, turn_id: str, user: Any) -> tuple[AgentSession, Turn | None]:
    """Create the child session (and its first turn, queued, when there is a request to carry), once:
    asked again (a second click, another tab), it returns the child it made and starts no turn."""
    turn = session.turns.filter(pk=turn_id).first()
    branch = turn_branch(turn)
    if turn is None or branch is None:
        raise ValidationError(ERROR_NO_BRANCH, code="invalid")
    text = _request_before(turn)
    with transaction.atomic():
        AgentSession.objects.select_for_update().filter(pk=session.pk).first()  # one branch at a time
        if (existing := branch_child(turn)) is not None:
            return existing, None
        child = session_create(
            team=session.team,
            user=user,
            mode=branch["mode"],
            execution=_branch_execution(branch["mode"], session.execution),
            title=(text or session.title)[:80],
        )
        child.parent = session
        child.save(update_fields=["parent"])
        first = turn_start(session=child, text=text) if text else None
    return child, first


def _branch_execution(mode_key: str, current: str) -> str:
    """A branch keeps the session's Ask or Agent unless its mode's catalog entry names one (a data
    analysis branch of an Ask session needs Agent for its SQL tools)."""
    mode = AgentMode.objects.filter(key=mode_key).values_list("execution", flat=True).first()
    return mode or current


def _request_before(turn: Turn) -> str:
    """The user's request that the proposal answered: the message before the choice."""
    earlier = turn.session.turns.filter(index__lt=turn.index, replaced_by__isnull=True)  # not what a resend replaced
    previous = earlier.order_by("-index").first()
    return previous.user_message if previous else turn.user_message
