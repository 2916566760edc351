"""Turn services: the only code that decides `Turn.status`.

Every status a turn takes is produced here and checked against `ALLOWED_FROM`, in the database
write itself (`UPDATE … WHERE status IN (allowed)`): an ended turn never flips back, whoever writes
late. A run writes its status changes together with its events (agents/events, group commit), so
what it writes is a `TurnWrite` built here: the columns plus the statuses they may replace.

    queued ──► running ──► completed | limit_reached
      │          │  ▲
      │          ▼  │
      │     requires_action
      └──────────┴────────► failed | cancelled   (from any open status)

Orphans — turns that nothing runs any more (their process died) — are ended `failed` by
`turn_end_orphans` (which turns are orphans is the runner's call, agents/runner.py), called when a turn
is started and on the runner's timer (never on a GET).
"""

from __future__ import annotations

import logging
from datetime import datetime
from functools import partial
from typing import Any

from asgiref.sync import sync_to_async
from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import F, Q, Sum, Value
from django.db.models.functions import Greatest
from django.dispatch import Signal
from django.utils import timezone

from aptix.models import Team
from modes.catalog import default_mode_for_team, drafts_applied, mode_usable
from modes.models import AgentMode, ModeHistory
from usage.quotas import quota_refuse

from .approvals import approvals_close
from .attachments import clean_file_ids, clean_resources, files_for_turn
from .events import events_append
from .events.channel import session_moved
from .events.payloads import final_payload
from .events.writer import TurnWrite
from .models import AgentSession, Execution, ToolApproval, Turn
from .runner import Runner, get_runner
from .sessions import ERROR_BAD_EXECUTION, session_manager
from .state import EndedState, ModeChange, PausedState

# Sent (asynchronously, `asend`) by the process that ran the turn when its run stops: it ended, or
# paused for approvals or client tools. Keyword argument `turn` (with its session). What a higher layer
# does with it (automations/receivers.py: a run's inbox items) must not assume it always comes: a
# process killed mid-run sends nothing, so such receivers also look at the turns on a timer.
run_stopped = Signal()

logger = logging.getLogger("aptix.runs")

Status = Turn.Status
OPEN = frozenset({Status.QUEUED, Status.RUNNING, Status.REQUIRES_ACTION, Status.AWAITING_APPROVAL})
# The statuses a turn may move to each status from. A new turn is created queued.
ALLOWED_FROM: dict[str, frozenset[str]] = {
    Status.QUEUED: frozenset(),
    Status.RUNNING: frozenset({Status.QUEUED, Status.REQUIRES_ACTION, Status.AWAITING_APPROVAL}),
    Status.REQUIRES_ACTION: frozenset({Status.RUNNING}),
    Status.AWAITING_APPROVAL: frozenset({Status.RUNNING}),
    Status.COMPLETED: frozenset({Status.RUNNING}),
    Status.LIMIT_REACHED: frozenset({Status.RUNNING}),
    Status.FAILED: OPEN,
    Status.CANCELLED: OPEN,
}

MAX_MESSAGE_LENGTH = 100_000
ERROR_EMPTY_MESSAGE = "The message is empty."
ERROR_MESSAGE_TOO_LONG = f"The message is longer than {MAX_MESSAGE_LENGTH} characters."
ERROR_TURN_RUNNING = "A turn is still running in this session. Wait for it to finish or stop it."
ERROR_SESSION_DELETED = "This session was deleted."
CODE_SESSION_DELETED = "session_deleted"
ERROR_INTERRUPTED = "This turn was interrupted because the server stopped while it ran."
ERROR_NO_WORKER = (
    "No worker picked this turn up. Start one with `manage.py aptix_worker` "
    "(REDIS_URL is set, so turns run in worker processes)."
)
STOPPED_BY_USER = "Stopped by the user."
CONTINUE_MESSAGE = "Continue from where you stopped."
ERROR_NOTHING_TO_CONTINUE = "There is nothing to continue: the session's last turn did not stop at a limit."
CODE_NOTHING_TO_CONTINUE = "nothing_to_continue"
# Codes on the ValidationErrors raised here; the API maps them to HTTP statuses.
CODE_TURN_RUNNING = "turn_running"
CODE_INVALID = "invalid"


class TransitionError(ValueError):
    """A status change the table does not allow (a bug in the caller, not a user error)."""


def transition(status: str, **columns: Any) -> TurnWrite:
    """A status change plus the columns written with it."""
    if status not in ALLOWED_FROM or not ALLOWED_FROM[status]:
        raise TransitionError(f"No turn moves to {status!r}.")
    return TurnWrite(fields={"status": status, **columns}, from_statuses=ALLOWED_FROM[status])


# --- starting ---------------------------------------------------------------------------------


def turn_start(
    *,
    session: AgentSession,
    text: str,
    execution: str | None = None,
    choice: dict[str, Any] | None = None,
    resume: bool = False,
    files: list[str] | None = None,
    resources: list[dict[str, str]] | None = None,
    grants: list[str] | None = None,
    sent_by_app: str = "",
) -> Turn:
    """Create the next turn of `session` (status queued) in the session's persisted mode. `choice` is
    the user's structured answer to a mode proposal ({"mode", "branch"}): consent to that mode change
    in this turn. A turn of the session still waiting for approvals is ended first: the new message
    declines what it waits for. `resume` ("Continue") carries on after a turn that stopped at a limit:
    a fresh step budget, the stopped turn's steps in its context (context.py); the message defaults to
    CONTINUE_MESSAGE. `files` are ids of the owner's uploads the message carries: attached to the
    session with it (agents/attachments.py; anyone else's is a ValidationError naming `files`);
    `resources` are MCP resources ({"server", "uri"}) the message carries (`clean_resources`); `grants`
    are tools the turn calls without asking (an automation's pre-approved tools), on top of the session's;
    `sent_by_app`: the MCP server whose app sent the message (the user confirmed it: agents/mcp_apps)."""
    if resume:
        text = text or CONTINUE_MESSAGE
    text = (text or "").strip()
    if not text:
        raise ValidationError({"message": ValidationError(ERROR_EMPTY_MESSAGE, code=CODE_INVALID)})
    if len(text) > MAX_MESSAGE_LENGTH:
        raise ValidationError({"message": ValidationError(ERROR_MESSAGE_TOO_LONG, code=CODE_INVALID)})
    execution = execution or session.execution
    if execution not in Execution.values:
        raise ValidationError({"execution": ValidationError(ERROR_BAD_EXECUTION, code=CODE_INVALID)})
    choice = clean_choice(choice)
    # past it: refused, nothing written (checked again below, with what open turns hold of it)
    limited = quota_refuse(team_id=session.team_id, user_id=session.user_id)
    file_ids = clean_file_ids(files)
    attached = clean_resources(resources)
    with transaction.atomic():
        locked = AgentSession.objects.select_for_update().get(pk=session.pk)
        if locked.deleted_at is not None:  # deleted since the caller looked it up
            raise ValidationError(ERROR_SESSION_DELETED, code=CODE_SESSION_DELETED)
        unended = locked.turns.filter(status__in=[Status.AWAITING_APPROVAL, Status.QUEUED, Status.RUNNING])
        open_turns = list(unended)
        if open_turns and turn_end_orphans(locked):  # ended what nothing runs any more: look again
            open_turns = list(unended.all())
        leave_deactivated_mode(locked)
        if any(t.status != Status.AWAITING_APPROVAL for t in open_turns):
            raise ValidationError(ERROR_TURN_RUNNING, code=CODE_TURN_RUNNING)
        for waiting in open_turns:  # the new message declines what they wait for
            turn_end_waiting(waiting, decision=ToolApproval.Decision.DECLINED_BY_NEW_MESSAGE)
        if limited:  # one turn start at a time in the team, each counting what the open turns hold
            Team.objects.select_for_update().only("pk").get(pk=locked.team_id)
            quota_refuse(team_id=locked.team_id, user_id=locked.user_id, held=partial(quota_held, locked))
        last = locked.turns.order_by("-index").first()
        if resume and (last is None or last.status != Status.LIMIT_REACHED):
            raise ValidationError(
                {"continue": ValidationError(ERROR_NOTHING_TO_CONTINUE, code=CODE_NOTHING_TO_CONTINUE)}
            )
        index = (last.index if last is not None else 0) + 1  # the last turn has the highest index
        turn = Turn.objects.create(
            session=locked,
            index=index,
            user_message=text,
            mode=locked.mode,
            execution=execution,
            choice=choice,
            files=files_for_turn(session=locked, file_ids=file_ids),
            resources=attached,
            grants=list(grants or []),
            sent_by_app=sent_by_app,
        )
        if not locked.title:
            locked.title = text[:80]
        locked.save(update_fields=["title", "updated_at"])
        # The user's other tabs put the session first in their sidebars (it is the newest now).
        transaction.on_commit(lambda: session_moved(locked.user_id, locked.pk))
    return turn


def quota_held(session: AgentSession, own: bool) -> int:
    """The tokens the open turns of `session`'s team (of its user, for their own quota) hold of the
    month's quota: each APTIX_QUOTA_TURN_RESERVE, less what it used so far (counted in the usage
    already), until it ends."""
    reserve = settings.APTIX_QUOTA_TURN_RESERVE
    open_turns = Turn.objects.filter(session__team_id=session.team_id, status__in=OPEN)
    if own:
        open_turns = open_turns.filter(session__user_id=session.user_id)
    left = Greatest(Value(reserve) - F("prompt_tokens") - F("completion_tokens"), Value(0))
    return int(open_turns.aggregate(held=Sum(left))["held"] or 0)


ERROR_BAD_CHOICE = "A choice is {\"mode\": a mode key, \"branch\": true or false}."


def clean_choice(choice: Any) -> dict[str, Any] | None:
    """The user's answer to a mode proposal, checked: {"mode": key, "branch": bool}, or None."""
    if choice is None:
        return None
    mode = choice.get("mode") if isinstance(choice, dict) else None
    branch = choice.get("branch", False) if isinstance(choice, dict) else None
    if (
        not isinstance(mode, str)
        or not mode.strip()
        or not isinstance(branch, bool)
        or set(choice) - {"mode", "branch"}
    ):
        raise ValidationError({"choice": ValidationError(ERROR_BAD_CHOICE, code=CODE_INVALID)})
    return {"mode": mode.strip().lower(), "branch": branch}


DEACTIVATED_REASON = "The {mode} mode was deactivated in the catalog; the session continues in the default mode."
CLOSED_TO_TEAM_REASON = (
    "The {mode} mode is no longer available to this team; the session continues in the default mode."
)


def leave_deactivated_mode(session: AgentSession) -> None:
    """A session whose mode a curator deactivated, or no longer offers to the session's team, moves to
    the team's default mode (else the catalog's) before its next turn, with a ModeHistory row (source
    "system") that the timeline shows: such a mode serves no turn. A session over the catalog with its
    drafts applied (a catalog test's) asks that catalog: a mode only a draft makes active serves it."""
    with drafts_applied(session.catalog_drafts):
        if mode_usable(session.mode, session.team_id):
            return
        previous = session.mode
        active = AgentMode.objects.filter(key=previous, is_active=True).exists()
        reason = (CLOSED_TO_TEAM_REASON if active else DEACTIVATED_REASON).format(mode=previous)
        session_manager.set_session_mode_sync(
            session.pk, default_mode_for_team(session.team_id), reason, None, None, source=ModeHistory.Source.SYSTEM
        )
    session.refresh_from_db(fields=["mode"])


def error_code(exc: ValidationError) -> str | None:
    """The code of the first error in `exc` (a plain or a per-field ValidationError)."""
    errors = [e for errs in exc.error_dict.values() for e in errs] if hasattr(exc, "error_dict") else exc.error_list
    return errors[0].code if errors else None


# --- the run's own writes (applied by the event writer, with the events) -----------------------


def started(*, model_label: str, now: datetime | None = None) -> TurnWrite:
    now = now or timezone.now()
    return transition(Status.RUNNING, started_at=now, model_label=model_label, heartbeat_at=now)


def finished(
    *,
    status: str,
    answer: str,
    error: str,
    mode: str,
    mode_changes: list[ModeChange],
    counters: dict[str, int],
    now: datetime | None = None,
) -> TurnWrite:
    if status not in (Status.COMPLETED, Status.LIMIT_REACHED, Status.FAILED, Status.CANCELLED):
        raise TransitionError(f"{status!r} is not an end status.")
    return transition(
        status,
        answer=answer,
        error=error,
        response_mode=mode,
        finished_at=now or timezone.now(),
        state=EndedState(mode_changes=mode_changes).to_json(),
        **counters,
    )


def counters(turn: Turn) -> TurnWrite:
    """The run's counters, written with the step's events (no status change)."""
    return TurnWrite(
        fields={
            "step_count": turn.step_count,
            "prompt_tokens": turn.prompt_tokens,
            "completion_tokens": turn.completion_tokens,
            "model_key": turn.model_key,
            "cost": turn.cost,
        }
    )


def task_state(state: dict[str, Any] | None) -> TurnWrite:
    """A running turn's state while an MCP server runs one of its calls as a task: a `PausedState`
    plus its `task` (agents/run/tool_calls.py), so a run resumed elsewhere goes on from there; None
    once the call has its result (nothing to resume any more)."""
    return TurnWrite(fields={"state": state or {}}, from_statuses=frozenset({Status.RUNNING}))


def apply_locally(turn: Turn, write: TurnWrite) -> None:
    """Give the run's in-memory turn the columns it hands to the event writer."""
    for name, value in write.fields.items():
        setattr(turn, name, value)


async def turn_pause(turn: Turn, state: PausedState) -> bool:
    """running → requires_action: the run stops here until the client posts its tool results."""
    write = transition(Status.REQUIRES_ACTION, state=state.to_json(), response_mode=state.mode)
    return await _apply(turn, write)


def awaiting_approval(state: PausedState) -> TurnWrite:
    """running → awaiting_approval, written with the approval.requested event: the run stops here
    until the user decided every held call (agents/approvals.py)."""
    return transition(Status.AWAITING_APPROVAL, state=state.to_json(), response_mode=state.mode)


def turn_claim_results(turn: Turn) -> bool:
    """Claim a turn waiting for client tool results for one request: a conditional UPDATE, so of two
    requests carrying the same results only one continues the turn (the other is told 409). The mark
    lives in its paused state and goes with it when the run pauses again or ends."""
    claimed = (
        Turn.objects.filter(pk=turn.pk, status=Status.REQUIRES_ACTION)
        .exclude(state__has_key=RESULTS_CLAIMED)
        .update(state={**(turn.state or {}), RESULTS_CLAIMED: True})
    )
    return bool(claimed)


RESULTS_CLAIMED = "results_claimed"


async def turn_resume(turn: Turn) -> bool:
    """requires_action / awaiting_approval → running: the client's tool results or the user's
    decisions arrived."""
    return await _apply(turn, transition(Status.RUNNING))


async def _apply(turn: Turn, write: TurnWrite) -> bool:
    updated = await Turn.objects.filter(pk=turn.pk, status__in=write.from_statuses or ()).aupdate(**write.fields)
    if updated:
        apply_locally(turn, write)
    return bool(updated)


# --- ending a turn no run holds ----------------------------------------------------------------


def turn_end_unrun(
    turn: Turn | str,
    *,
    session_id: str,
    status: str,
    event_type: str,
    payload: dict[str, Any],
    mode: str,
    error: str = "",
    now: datetime | None = None,
    before: list[tuple[str, dict[str, Any]]] | None = None,
    only_from: frozenset[str] | None = None,
) -> bool:
    """End a turn that no run holds (so no EventRecorder): its row and its final event (after the
    events `before`) in one transaction, broadcast once committed. False if it had ended meanwhile,
    or moved out of `only_from` (the status the caller saw it in: a paused turn that a run resumed
    meanwhile is that run's to end)."""
    turn_id = turn if isinstance(turn, str) else turn.pk
    write = transition(status, error=error, finished_at=now or timezone.now(), response_mode=mode, state={})
    allowed = (write.from_statuses or frozenset()) & (only_from if only_from is not None else OPEN)
    with transaction.atomic():
        updated = Turn.objects.filter(pk=turn_id, status__in=allowed).update(**write.fields)
        if not updated:
            return False
        final = final_payload(payload, status=status, answer="", mode=mode, mode_changes=[])
        events_append(turn_id, session_id, [*(before or []), (event_type, final)])
    return True


DECLINED_BY_NEW_MESSAGE = "A new message was sent, so what this turn waited for was declined."


def turn_end_waiting(turn: Turn, *, decision: str, reason: str | None = None) -> bool:
    """End a turn that waits for approvals: what is pending is closed as `decision` (a new message,
    a cancel, an automation's approval timeout), the turn ends cancelled with its approval.decided and
    final events (`reason`: what the final event says, when not the decision's usual words). False
    when it no longer waits (decided and resumed, or ended, meanwhile): nothing is written.

    Locks are taken in one order everywhere (the session, then the turn, then its approvals:
    approval_decide does the same), so a decision and a cancel racing on PostgreSQL wait for each
    other instead of deadlocking."""
    with transaction.atomic():
        # The turn's row alone (Turn's default ordering joins its session, which FOR UPDATE would lock
        # too, before the turn: the opposite order to approval_decide's).
        waiting = Turn.objects.select_for_update(of=("self",)).filter(pk=turn.pk, status=Status.AWAITING_APPROVAL)
        if not list(waiting.order_by().values_list("pk", flat=True)):
            return False
        decided = approvals_close(turn, decision)
        reason = reason or (
            DECLINED_BY_NEW_MESSAGE if decision == ToolApproval.Decision.DECLINED_BY_NEW_MESSAGE else STOPPED_BY_USER
        )
        return turn_end_unrun(
            turn,
            session_id=turn.session_id,
            status=Status.CANCELLED,
            event_type="turn.cancelled",
            payload={"reason": reason},
            mode=turn.response_mode or turn.mode,
            before=[("approval.decided", {"decisions": decided})] if decided else [],
            only_from=frozenset({Status.AWAITING_APPROVAL}),
        )


def turn_cancel_unrun(turn: Turn) -> bool:
    """Cancel a turn no run holds here (queued, or waiting for client tool results or approvals), if
    it is still in the status the caller saw: False when it moved on meanwhile (a run took it)."""
    if turn.status == Status.AWAITING_APPROVAL:
        return turn_end_waiting(turn, decision=ToolApproval.Decision.CANCELLED)
    return turn_end_unrun(
        turn,
        session_id=turn.session_id,
        status=Status.CANCELLED,
        event_type="turn.cancelled",
        payload={"reason": STOPPED_BY_USER},
        mode=turn.mode,
        only_from=frozenset({turn.status}),
    )


def turn_end_orphans(session: AgentSession | None = None, *, runner: Runner | None = None) -> list[str]:
    """End the turns (of `session`, or of every session) that nothing runs any more, so they do not
    block a session for ever; returns their ids. Which turns are orphans is the runner's call (one
    process: open with no task here; workers: a stopped heartbeat, or queued with no taker). Each
    ends `failed` with a `turn.failed` event saying why."""
    runner = runner or get_runner()
    now = timezone.now()
    # A turn waiting for the answer to an MCP server's question is held by the run whose call is open
    # (one that can be resumed is held by none, like an approval).
    asking = Q(status=Status.AWAITING_APPROVAL, approvals__kind="elicitation", approvals__decision="")
    asking &= Q(approvals__request__resume__isnull=True)
    turns = Turn.objects.filter(Q(status__in=[Status.QUEUED, Status.RUNNING]) | asking).distinct()
    turns = runner.orphan_candidates(turns if session is None else turns.filter(session=session), now)
    stale: dict[str, tuple[Turn, str]] = {}
    for turn in turns.select_related("session"):
        if reason := runner.orphan_reason(turn, now):
            stale[turn.pk] = (turn, reason)
    for turn, error in stale.values():
        _end_orphan(turn, error, now)
    if stale:
        where, session_id = (f" of session {session.pk}", session.pk) if session else ("", None)
        extra = {"event": "runs.orphans_ended", "session_id": session_id, "turn_ids": list(stale)}
        logger.warning("Ended %d interrupted turn(s)%s", len(stale), where, extra=extra)
    return list(stale)


def _end_orphan(turn: Turn, error: str, now: datetime) -> None:
    """End one orphan `failed`, with the question it waited on closed (no card stays pending)."""
    with transaction.atomic():
        asking = turn.status == Status.AWAITING_APPROVAL
        decided = approvals_close(turn, ToolApproval.Decision.CANCELLED) if asking else []
        ended = turn_end_unrun(
            turn,
            session_id=turn.session_id,
            status=Status.FAILED,
            event_type="turn.failed",
            payload={"error": error, "kind": "interrupted"},
            mode=turn.session.mode,
            error=error,
            now=now,
            before=[("approval.decided", {"decisions": decided})] if decided else [],
            only_from=frozenset({Status.AWAITING_APPROVAL}) if asking else None,
        )
        if not ended:  # it moved on meanwhile (answered, ended): its rows are someone else's
            transaction.set_rollback(True)


async def turn_cancel(*, turn: Turn, runner: Runner | None = None) -> bool:
    """Ask a turn to stop. Returns False when it had already finished. A run this process holds is
    cancelled at once; a worker's sees the flag; a turn nothing runs (queued with no taker, waiting
    for client tool results, held by a worker whose claim expired) is ended here at once."""
    if turn.is_finished:
        return False
    await Turn.objects.filter(pk=turn.pk).aupdate(cancel_requested=True)
    await turn.arefresh_from_db(fields=["status", "response_mode"])
    if turn.is_paused:  # no run holds a paused turn, in this process or any worker
        if await sync_to_async(turn_cancel_unrun)(turn):
            return True
        # A decision resumed it meanwhile: its run holds it now, and stops on the flag or at once here.
        await turn.arefresh_from_db(fields=["status", "response_mode"])
        if turn.is_finished:
            return True
    runner = runner or get_runner()
    if not runner.stop(turn.pk):
        await turn.arefresh_from_db(fields=["status", "worker", "lease_until"])
        if runner.unheld(turn, timezone.now()):  # nothing would see the flag: end it here, now
            await sync_to_async(turn_cancel_unrun)(turn)
    return True
