"""Carrying a request over to the mode a proposal switched to.

`session_branch`: "Continue in a new <mode> session" — a child session in the mode a turn's proposal
branched to, linked to its parent, whose first turn carries the request that led to the proposal.
Child and turn are created in one transaction: a failure leaves neither.

`turn_continue_after_switch`: "Switch this session to <mode>" — once the switching turn has ended, a
follow-up turn in the same session, in the new mode (a new turn: the new mode's tools apply) and the
execution its catalog entry names, carries the request on. Made at most once, by whichever process
asks first: the one that ran the switching turn, or the API request that is waiting for it."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction

from modes.models import AgentMode
from projects.services import project_member

from .events.payloads import Branch
from .models import AgentSession, ToolApproval, Turn
from .sessions import session_create
from .state import EndedState, ModeChange, turn_state
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
            # In its parent's project, while the user is still a member of it.
            project=session.project if session.project and project_member(user, session.project) else None,
        )
        child.parent = session
        child.save(update_fields=["parent"])
        first = turn_start(session=child, text=text) if text else None
    return child, first


def switch_continues(turn: Turn) -> bool:
    """Cheap first look (the turn's own columns, no query): whether a turn may have switched its
    session's mode, so that `turn_continue_after_switch` has something to do."""
    return turn.status == Turn.Status.COMPLETED and bool(turn.response_mode) and turn.response_mode != turn.mode


def turn_continue_after_switch(*, turn_id: str) -> Turn | None:
    """The follow-up turn (queued) of a turn that ended switching its session to another mode with the
    user's consent (a proposal's "Switch this session" button or the API's `choice`, or an approved
    mode-change card), carrying the request on; None when there is nothing to carry on (no consented
    switch in this session, the switch asked for a new session, another turn came since, or the
    follow-up was made already)."""
    turn = Turn.objects.select_related("session").filter(pk=turn_id).first()
    if turn is None or not switch_continues(turn):
        return None
    change = _consented_switch(turn)
    if change is None:
        return None
    # The request the switch answered: a choice answers the message before it; an approved card the
    # turn's own message.
    text = _request_before(turn) if turn.choice else turn.user_message
    session = turn.session
    try:
        with transaction.atomic():
            locked = AgentSession.objects.select_for_update().get(pk=session.pk)
            if locked.deleted_at is not None or locked.turns.filter(index__gt=turn.index).exists():
                return None
            if locked.mode != change["newMode"]:  # switched again since (by the user): not this switch's
                return None
            execution = _branch_execution(locked.mode, locked.execution)
            if execution != locked.execution:  # the session goes on as the new mode works
                locked.execution = execution
                locked.save(update_fields=["execution", "updated_at"])
            follow_up = turn_start(session=locked, text=text, execution=execution)
            follow_up.origin = Turn.Origin.CONTINUED
            follow_up.save(update_fields=["origin"])
    except (ValidationError, IntegrityError):  # a message sent meanwhile (a turn running, its index taken)
        return None
    return follow_up


def _consented_switch(turn: Turn) -> ModeChange | None:
    """The turn's last mode change if it switched this session (not a new one) with the user's consent."""
    state = turn_state(turn)
    changes = state.mode_changes if isinstance(state, EndedState) else []
    if not changes or changes[-1]["branch"]:
        return None
    change = changes[-1]
    choice = turn.choice or {}
    if choice.get("mode") == change["newMode"] and not choice.get("branch"):
        return change
    approved = turn.approvals.filter(kind=ToolApproval.Kind.MODE_CHANGE, decision=ToolApproval.Decision.APPROVED)
    return change if approved.exclude(branch=True).exists() else None  # branch None: the model's (false)


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
