"""An MCP server asks the user during a tool call (tools/mcp/elicitation.py): the audit row and the
pause of the turn, the user's answer, and what the waiting run reads back.

The run that made the call holds the turn while it waits: the call stays open on the server's
session in that process. `elicitation_request` writes one `ToolApproval` row of kind "elicitation"
(its `request`: mode, message, schema or url); the run then pauses the turn (`awaiting_approval`,
the item in its state's `awaiting`, an `approval.requested` event). `elicitation_answer` records the
session owner's answer (a form's content checked against the schema) and puts the turn back to
`running` in one transaction; the waiting run reads the answer with `elicitation_answered`, writes
the `approval.decided` event (it holds the turn's event numbers) and gives the answer to the server.
A new message or a cancel closes the row (`approvals_close`): the run reads "declined" or
"cancelled". Such a request cannot outlive the process that holds the call: when that process is
gone, the orphan sweep ends the turn with ERROR_LOST (agents/turns.py).

A question that can be resumed (agents/run/asking.py) is held by no run: its row's `request` also
keeps `resume` (the call's id, the key the server asked under, its `request_state`), the turn waits
like an approval, and the answer records the decision and its approval.decided event and, once
nothing else is pending, leaves the turn to be resumed (`elicitation_answer_to_resume`).
"""

from __future__ import annotations

import asyncio
from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from tools.mcp import ACTIONS, TOOL_SEPARATOR, Action, Answer, Request, validate_content

from .approvals import CODE_INVALID, CODE_STALE, ERROR_NOT_WAITING, ERROR_UNKNOWN_CALL
from .events import events_append
from .models import ToolApproval, Turn, TurnEvent
from .state import PendingApproval

Kind = ToolApproval.Kind
Decision = ToolApproval.Decision

ERROR_LOST = (
    "An MCP server asked a question during a tool call, but the process that held the call stopped "
    "(a restart), so the question cannot be answered any more. Send your message again."
)
ERROR_OWNER_ONLY = "Only the session's owner can answer this question."
ERROR_CLOSED = "This question is closed: {reason}"
ACTION_DECISIONS = {"accept": Decision.ACCEPTED, "decline": Decision.DECLINED, "cancel": Decision.CANCELLED}
DECISION_ACTIONS: dict[str, Action] = {
    Decision.ACCEPTED: "accept",
    Decision.DECLINED: "decline",
    Decision.DECLINED_BY_NEW_MESSAGE: "decline",
    Decision.CANCELLED: "cancel",
}


def elicitation_request(
    turn: Turn, *, call_id: str, name: str, arguments: str, request: Request, resume: dict[str, Any] | None = None
) -> PendingApproval:
    """The audit row of one question (ids: the tool call's, then `<id>.2`, `<id>.3` for later
    questions in the same call) and the pending item the turn's state lists; `resume`: what the
    paused call needs to be sent again (kept on the row only)."""
    asked = ToolApproval.objects.filter(turn=turn, tool_call_id__startswith=call_id).count()
    item_id = call_id if asked == 0 else f"{call_id}.{asked + 1}"
    details: dict[str, Any] = {"mode": request.mode, "message": request.message}
    if request.mode == "url":
        details["url"] = request.url
    elif request.mode == "sampling":  # the server asks to use the user's model: the card shows the request
        details["sampling"] = request.sampling
    else:
        details["schema"] = request.schema
    session = turn.session
    ToolApproval.objects.create(
        turn=turn,
        session=session,
        team_id=session.team_id,
        tool_call_id=item_id,
        tool=name,
        server=name.partition(TOOL_SEPARATOR)[0],
        arguments=arguments,
        kind=Kind.ELICITATION,
        request={**details, "resume": resume} if resume else details,
    )
    return {
        "id": item_id,
        "name": name,
        "arguments": arguments,
        "kind": Kind.ELICITATION,
        "server": name.partition(TOOL_SEPARATOR)[0],
        "annotations": {},
        "reason": "",
        **details,  # type: ignore[typeddict-item]  # mode, message, schema | url
    }


def sampling_recorded(turn_id: str, item_id: str, content: dict[str, Any]) -> None:
    """What the user's model answered an approved sampling request (or why it could not), kept on
    the request's audit row."""
    ToolApproval.objects.filter(turn_id=turn_id, tool_call_id=item_id).update(content=content)


def elicitation_answered(turn_id: str, item_id: str) -> Answer | None:
    """The answer once there is one (a closed row reads as decline or cancel), else None."""
    row = ToolApproval.objects.filter(turn_id=turn_id, tool_call_id=item_id).only("decision", "content").first()
    if row is None:
        return Answer("cancel")
    action = DECISION_ACTIONS.get(str(row.decision))
    if action is None:
        return None
    return Answer(action, row.content if action == "accept" else None)


def resume_details(row: ToolApproval) -> tuple[str, str | None]:
    """(key, request_state) of a question that can be resumed."""
    resume = row.request["resume"]
    return str(resume["key"]), resume.get("state")


def elicitation_answer(*, turn: Turn, item_id: str, action: str, content: Any, user: Any) -> Turn:
    """Record the owner's answer and put the turn back to running (a question a run holds). Raises
    ValidationError (code "stale", "invalid" or "owner") naming the field, writing nothing, on a
    wrong answer."""
    return _answer(turn=turn, item_id=item_id, action=action, content=content, user=user)[0]


def elicitation_answer_to_resume(*, turn: Turn, item_id: str, action: str, content: Any, user: Any) -> Turn | None:
    """`elicitation_answer`; the turn when it is now the caller's to resume (a question no run holds,
    and nothing else pending), else None (a run holds it and goes on, or other items wait)."""
    answered, resume = _answer(turn=turn, item_id=item_id, action=action, content=content, user=user)
    return answered if resume else None


def _answer(*, turn: Turn, item_id: str, action: str, content: Any, user: Any) -> tuple[Turn, bool]:
    if action not in ACTIONS:
        raise ValidationError({"decision": ValidationError('Answer "accept", "decline" or "cancel".', CODE_INVALID)})
    with transaction.atomic():
        locked = Turn.objects.select_for_update().select_related("session").get(pk=turn.pk)
        if locked.session.user_id != getattr(user, "pk", None):
            raise ValidationError({"toolCallId": ValidationError(ERROR_OWNER_ONLY, code="owner")})
        row = locked.approvals.filter(tool_call_id=item_id, kind=Kind.ELICITATION).first()
        if row is not None and (reason := row.request.get("closed")):
            raise ValidationError({"toolCallId": ValidationError(ERROR_CLOSED.format(reason=reason), CODE_STALE)})
        if locked.status != Turn.Status.AWAITING_APPROVAL:
            raise ValidationError({"toolCallId": ValidationError(ERROR_NOT_WAITING, code=CODE_STALE)})
        if row is None or not row.is_pending:
            raise ValidationError({"toolCallId": ValidationError(ERROR_UNKNOWN_CALL.format(id=item_id), CODE_STALE)})
        answered = None
        if action == "accept" and row.request.get("mode") == "form":
            try:
                answered = validate_content(row.request.get("schema") or {}, content or {})
            except ValueError as exc:
                raise ValidationError({"content": ValidationError(str(exc), code=CODE_INVALID)}) from None
        row.decision, row.content = ACTION_DECISIONS[action], answered
        row.decided_by, row.decided_at = user, timezone.now()
        row.save(update_fields=["decision", "content", "decided_by", "decided_at"])
        if "resume" in row.request:  # no run holds it: the decision's event is written here
            events_append(locked.pk, locked.session_id, [("approval.decided", {"decisions": [_decided(row)]})])
            return locked, not locked.approvals.filter(decision="").exists()
        Turn.objects.filter(pk=locked.pk).update(status=Turn.Status.RUNNING, state={})
    locked.refresh_from_db()
    return locked, False


def elicitation_close(turn_id: str, item_id: str, reason: str) -> dict[str, Any] | None:
    """Close a question a run held whose call ended without its answer (its server went away, or
    withdrew the request): the row reads "cancelled" by nobody, keeps `reason` (a late answer is
    refused with it: `question_closed`), and the turn runs again. The approval.decided entry (with
    the reason) for the run to write, or None when the question was answered or closed already."""
    with transaction.atomic():
        locked = Turn.objects.select_for_update().get(pk=turn_id)
        row = locked.approvals.filter(tool_call_id=item_id, kind=Kind.ELICITATION).first()
        if row is None or not row.is_pending:
            return None
        row.decision, row.decided_at = Decision.CANCELLED, timezone.now()
        row.request = {**row.request, "closed": reason}
        row.save(update_fields=["decision", "decided_at", "request"])
        if locked.status == Turn.Status.AWAITING_APPROVAL:
            Turn.objects.filter(pk=locked.pk).update(status=Turn.Status.RUNNING, state={})
    return {**_decided(row), "reason": reason}


def question_closed(turn: Turn, item_id: str) -> str | None:
    """Why the turn's question `item_id` was closed without an answer (`elicitation_close`), else None."""
    row = turn.approvals.filter(tool_call_id=item_id, kind=Kind.ELICITATION).only("request").first()
    reason = row.request.get("closed") if row is not None else None
    return ERROR_CLOSED.format(reason=reason) if reason else None


def decided_payload(turn_id: str, item_id: str) -> dict[str, Any]:
    """The approval.decided entry of an answered question (the waiting run writes the event: it
    holds the turn's event numbers)."""
    return _decided(ToolApproval.objects.select_related("decided_by").get(turn_id=turn_id, tool_call_id=item_id))


def _decided(row: ToolApproval) -> dict[str, Any]:
    return {
        "id": row.tool_call_id,
        "name": row.tool,
        "kind": Kind.ELICITATION,
        "decision": row.decision,
        "scope": "",
        "branch": None,
        "decided_by": getattr(row.decided_by, "username", None),
    }


def closed(turn_id: str, item_id: str) -> bool:
    """Whether the question was closed by the turn's end (a cancel, a new message), not answered."""
    ended = [Decision.CANCELLED, Decision.DECLINED_BY_NEW_MESSAGE]
    rows = ToolApproval.objects.filter(turn_id=turn_id, tool_call_id=item_id, decided_by__isnull=True)
    return rows.filter(decision__in=ended).exists()


def pending_elicitation(turn: Turn) -> bool:
    """Whether the paused turn waits for an answer to an MCP server's question (a run holds it)."""
    state = turn.state or {}
    return any(item.get("kind") == Kind.ELICITATION for item in state.get("awaiting", []))


def events_last_seq(turn_id: str) -> int:
    """The turn's latest event number (0 before any)."""
    return TurnEvent.objects.filter(turn_id=turn_id).order_by("-seq").values_list("seq", flat=True).first() or 0


async def turn_after_answer(turn_id: str, seq: int, poll: float = 0.3) -> Turn:
    """The turn once its run went on past event `seq` to its end or its next pause (the API answers
    then, as after approvals)."""
    while True:
        turn = await Turn.objects.select_related("session").aget(pk=turn_id)
        if turn.is_finished or (
            turn.is_paused and await TurnEvent.objects.filter(turn_id=turn_id, seq__gt=seq).aexists()
        ):
            return turn
        await asyncio.sleep(poll)
