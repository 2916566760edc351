"""Consent, enforced by the server (DESIGN.md "Consent and approvals", TUL-007 §4.3): which tool calls
wait for the user, the audit rows of those that did, and the user's decisions.

- `approval_kind(...)` decides, for one tool call of a run, whether it runs now or waits: a mode
  change by the model waits unless the user consented to that mode in this turn (a proposal's option
  button, the API's `choice`) or `APTIX_MODE_CHANGE_CONSENT=trust`; an MCP tool follows the mode's
  `approval_policy`, then the session's grants, then its annotations (read-only runs, anything else
  asks); internal tools run (they act inside the session) unless the policy names one with `ask`.
- `approvals_request` writes one `ToolApproval` row per waiting call (the run then pauses the turn:
  status `awaiting_approval`, agents/turns.py).
- `approval_decide` records the user's decisions (the web cards, the API); once nothing is pending,
  the caller hands the turn back to the runner, and the run executes what was approved and tells the
  model what was not.
- `approvals_close` ends what is still pending when the turn ends otherwise (a new message, a cancel).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Literal

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from modes.catalog import normalize_mode_key
from modes.validators import parse_approval_entry
from tools.builtin.mode_change import ModeChangeTool
from tools.mcp import TOOL_SEPARATOR as MCP_SEPARATOR

from .events import events_append
from .models import AgentSession, ToolApproval, Turn
from .state import PendingApproval

Kind = ToolApproval.Kind
Decision = ToolApproval.Decision
Scope = ToolApproval.Scope

MODE_CHANGE_TOOL = ModeChangeTool.TOOL_NAME
DECLINED_MODE_CHANGE = "The user declined the mode change; stay in the current mode."
DENIED_TOOL = "The user denied this tool call; do not try it again in this turn."
DECLINED_CONNECT = (
    "The user did not connect this server (their own credentials), so it could not run; do not try its tools "
    "again in this turn."
)
CODE_STALE = "stale"  # the API answers 409
CODE_INVALID = "invalid"  # the API answers 400
ERROR_NOT_WAITING = "This turn is not waiting for an approval (it was decided or has ended)."
ERROR_UNKNOWN_CALL = "No approval is pending for tool call {id!r} in this turn."
ERROR_ALREADY_DECIDED = "Tool call {id!r} was already decided."
ERROR_QUESTION = "{id!r} is an MCP server's question: answer it with accept, decline or cancel."


def mode_change_consent() -> Literal["ask", "trust"]:
    return "trust" if str(getattr(settings, "APTIX_MODE_CHANGE_CONSENT", "ask")).lower() == "trust" else "ask"


# --- which calls wait ----------------------------------------------------------------------------


def policy_decision(policy: Iterable[str], name: str) -> str | None:
    """ "auto", "ask" or None (no entry matches) for the tool `name` under a mode's approval policy;
    the most specific entry wins: `<server>.<tool>` over `<server>.*` over `*`."""
    server, _, tool = name.partition(MCP_SEPARATOR) if MCP_SEPARATOR in name else ("", "", name)
    wanted = [f"{server}.{tool}", f"{server}.*", "*"] if server else [name, "*"]
    found: dict[str, str] = {}
    for entry in policy or []:
        parsed = parse_approval_entry(entry)
        if parsed is not None:
            found[parsed[0]] = parsed[1]
    return next((found[p] for p in wanted if p in found), None)


def _named_decision(policy: Iterable[str], name: str) -> str | None:
    """The decision of the policy entry naming exactly `name` ("document_write: ask"), not a pattern."""
    entries = (parse_approval_entry(entry) for entry in policy or [])
    return next((parsed[1] for parsed in entries if parsed is not None and parsed[0] == name), None)


def approval_kind(
    *,
    name: str,
    kind: str | None,
    arguments: str,
    current_mode: str,
    policy: Iterable[str],
    grants: Iterable[str],
    choice: dict[str, Any] | None,
    read_only: bool,
    hold_mode_changes: bool = False,
) -> str | None:
    """The ToolApproval kind a call must wait for, or None when it runs now. `hold_mode_changes` (a
    catalog test's session, whose mode change is recorded, never made): a mode change waits even
    under `APTIX_MODE_CHANGE_CONSENT=trust`."""
    if name == MODE_CHANGE_TOOL:
        return _mode_change_kind(arguments, current_mode, choice, hold=hold_mode_changes)
    if kind == "internal":  # they act inside the session: they run, unless the policy names one to ask
        return Kind.TOOL if _named_decision(policy, name) == "ask" and name not in set(grants or []) else None
    if kind != "mcp":
        return None  # client tools are the API client's; unknown ones fail
    if name in set(grants or []):
        return None
    decision = policy_decision(policy, name)
    if decision is None:
        decision = "auto" if read_only else "ask"
    return Kind.TOOL if decision == "ask" else None


def _mode_change_kind(
    arguments: str, current_mode: str, choice: dict[str, Any] | None, *, hold: bool = False
) -> str | None:
    if mode_change_consent() == "trust" and not hold:
        return None
    requested = requested_mode(arguments)
    if requested is None or requested == normalize_mode_key(current_mode):
        return None  # the tool answers an invalid call, or a change to the current mode, itself
    if (
        choice
        and normalize_mode_key(str(choice.get("mode") or "")) == requested
        and bool(choice.get("branch")) == requested_branch(arguments)
    ):
        return None  # the user chose this mode, in this session or a new one, with the proposal's button
    return Kind.MODE_CHANGE


def requested_mode(arguments: str) -> str | None:
    try:
        args = json.loads(arguments or "{}")
    except ValueError:
        return None
    mode = args.get("mode") if isinstance(args, dict) else None
    return normalize_mode_key(mode) if isinstance(mode, str) and mode.strip() else None


def requested_branch(arguments: str) -> bool:
    """Whether a mode change asks for a new session (TUL-007's `branch`, false when absent)."""
    try:
        args = json.loads(arguments or "{}")
    except ValueError:
        return False
    return isinstance(args, dict) and args.get("branch") is True


def with_branch(arguments: str, branch: bool | None) -> str:
    """A mode change's arguments with the user's choice of a new session (None: the model's)."""
    if branch is None:
        return arguments
    args = json.loads(arguments or "{}")
    args["branch"] = bool(branch)
    return json.dumps(args)


# --- audit rows and decisions ---------------------------------------------------------------------


def approvals_request(turn: Turn, calls: list[PendingApproval]) -> list[ToolApproval]:
    """One pending ToolApproval row per call (idempotent per turn and tool call id)."""
    session = turn.session
    rows = []
    for call in calls:
        row, _ = ToolApproval.objects.get_or_create(
            turn=turn,
            tool_call_id=call["id"],
            defaults={
                "session": session,
                "team_id": session.team_id,
                "tool": call["name"],
                "server": call["server"],
                "arguments": call["arguments"],
                "annotations": call["annotations"],
                "kind": call["kind"],
                "reason": call["reason"],
            },
        )
        rows.append(row)
    return rows


@dataclass(frozen=True)
class UserDecision:
    """One decision from a card or the API: approve or deny, once or for the session; `branch`
    overrides the model's flag for a mode change ("Switch in a new session")."""

    tool_call_id: str
    approve: bool
    scope: str = Scope.ONCE
    branch: bool | None = None


def approval_decide(*, turn: Turn, decisions: list[UserDecision], user: Any, complete: bool = False) -> bool:
    """Record `decisions` for the pending approvals of `turn`; True when none is pending any more (the
    caller then resumes the run). `complete` (the API) requires every pending call decided at once.
    Raises ValidationError (code "stale" or "invalid", naming the field) and writes nothing on bad input."""
    now = timezone.now()
    with transaction.atomic():
        # Locks in one order everywhere: the session (its grants change here), the turn, its approvals.
        list(AgentSession.objects.select_for_update().filter(pk=turn.session_id).values_list("pk", flat=True))
        locked = Turn.objects.select_for_update().select_related("session").get(pk=turn.pk)
        if locked.status != Turn.Status.AWAITING_APPROVAL:
            raise ValidationError({"approvals": ValidationError(ERROR_NOT_WAITING, code=CODE_STALE)})
        rows = {row.tool_call_id: row for row in locked.approvals.all()}
        _check_decisions(rows, decisions, complete=complete)
        grants = list(locked.session.approval_grants or [])
        decided = []
        for decision in decisions:
            row = rows[decision.tool_call_id]
            row.decision = Decision.APPROVED if decision.approve else Decision.DENIED
            row.scope = decision.scope if decision.approve else Scope.ONCE
            row.branch = decision.branch if row.kind == Kind.MODE_CHANGE else None
            row.decided_by, row.decided_at = user, now
            row.save(update_fields=["decision", "scope", "branch", "decided_by", "decided_at"])
            if decision.approve and decision.scope == Scope.SESSION and row.kind == Kind.TOOL:
                grants = [*grants, row.tool] if row.tool not in grants else grants
            decided.append(_decided_payload(row, user))
        if grants != list(locked.session.approval_grants or []):
            AgentSession.objects.filter(pk=locked.session_id).update(approval_grants=grants)
        events_append(locked.pk, locked.session_id, [("approval.decided", {"decisions": decided})])
        return not any(row.is_pending for row in rows.values())


def _check_decisions(rows: dict[str, ToolApproval], decisions: list[UserDecision], *, complete: bool) -> None:
    seen: set[str] = set()
    for i, decision in enumerate(decisions):
        row = rows.get(decision.tool_call_id)
        field = f"approvals[{i}].toolCallId"
        if row is None:
            raise ValidationError({field: ValidationError(ERROR_UNKNOWN_CALL.format(id=decision.tool_call_id))})
        if row.kind == Kind.ELICITATION:  # answered with its own form (agents/elicitations.py)
            raise ValidationError({field: ValidationError(ERROR_QUESTION.format(id=decision.tool_call_id))})
        if not row.is_pending or decision.tool_call_id in seen:
            raise ValidationError(
                {field: ValidationError(ERROR_ALREADY_DECIDED.format(id=decision.tool_call_id), code=CODE_STALE)}
            )
        if decision.scope not in (Scope.ONCE, Scope.SESSION):
            raise ValidationError({f"approvals[{i}].scope": "The scope must be 'once' or 'session'."})
        seen.add(decision.tool_call_id)
    missing = [call for call, row in rows.items() if row.is_pending and call not in seen]
    if complete and missing:
        raise ValidationError(
            {"approvals": ValidationError(f"Every pending call must be decided; missing: {', '.join(missing)}.")}
        )


def _decided_payload(row: ToolApproval, user: Any) -> dict[str, Any]:
    return {
        "id": row.tool_call_id,
        "name": row.tool,
        "kind": row.kind,
        "decision": row.decision,
        "scope": row.scope,
        "branch": row.branch,
        "decided_by": getattr(user, "username", None),
    }


def approvals_close(turn: Turn, decision: str) -> list[dict[str, Any]]:
    """Mark what is still pending in `turn` as `decision` (declined by a new message, cancelled);
    the approval.decided payloads, for the caller's final event. Runs in the caller's transaction."""
    now = timezone.now()
    pending = list(ToolApproval.objects.select_for_update().filter(turn_id=turn.pk, decision=""))
    for row in pending:
        row.decision, row.decided_at = decision, now
        row.save(update_fields=["decision", "decided_at"])
    return [_decided_payload(row, None) for row in pending]


def grant_revoke(*, session: AgentSession, tool: str) -> AgentSession:
    """Take back an "allow for this session" grant (the Tools panel)."""
    with transaction.atomic():
        locked = AgentSession.objects.select_for_update().get(pk=session.pk)
        locked.approval_grants = [name for name in locked.approval_grants or [] if name != tool]
        locked.save(update_fields=["approval_grants", "updated_at"])
    session.approval_grants = locked.approval_grants
    return session


def connect_answered(*, user: Any, server: str) -> list[Turn]:
    """The user connected `server`: their turns waiting for that are approved to go on; the turns
    that now wait for nothing more (each for the caller to hand back to the runner)."""
    waiting = Turn.objects.filter(
        status=Turn.Status.AWAITING_APPROVAL,
        session__user=user,
        approvals__kind=Kind.CONNECT,
        approvals__server=server,
        approvals__decision="",
    ).distinct()
    resumed = []
    for turn in waiting:
        calls = turn.approvals.filter(kind=Kind.CONNECT, server=server, decision="").values_list(
            "tool_call_id", flat=True
        )
        decisions = [UserDecision(call, approve=True) for call in calls]
        try:
            if decisions and approval_decide(turn=turn, decisions=decisions, user=user):
                resumed.append(turn)
        except ValidationError:
            continue  # decided or ended meanwhile
    return resumed
