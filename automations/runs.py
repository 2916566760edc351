"""An automation's runs: claimed (one row per scheduled time, whatever the number of processes),
begun (a session and a turn under the owner's identity, dispatched to the deployment's runner), and
followed (the run copies its turn's status; a paused turn's approvals go to the inbox; a failed run is
retried with backoff, then reported; an approval nobody answers in time ends the run as expired).

The only writer of AutomationRun. Sync services: the scheduler (scheduler.py) and the views call them
on a worker thread and dispatch what `run_begin` answers on their event loop."""

from __future__ import annotations

import logging
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils import timezone

from agents.models import AgentSession, ToolApproval, Turn
from agents.sessions import session_create
from agents.turns import error_code, turn_end_waiting, turn_start
from aptix.models import Membership
from usage.quotas import CODE_QUOTA

from . import inbox
from .models import Automation, AutomationRun, Overlap
from .prompting import prompt_fill
from .services import automation_pause

logger = logging.getLogger("aptix.automations")
Status = AutomationRun.Status
OPEN = [Status.QUEUED, Status.RUNNING, Status.REQUIRES_ACTION, Status.AWAITING_APPROVAL]
FAILURES_TO_PAUSE = 3
BEGIN_STALE = timedelta(seconds=60)  # a run begun this long ago without a turn: its process died beginning it
ERROR_SKIPPED_OVERLAP = "Skipped: the previous run was still going."
ERROR_MISSED = "Skipped: this time passed while no Aptix process was running (catch-up is off)."
ERROR_OWNER_GONE = "Stopped: its owner {who} is no longer an active member of the team."
ERROR_PAUSED_FAILURES = "Paused after {n} failed runs in a row; the last one: {error}"
ERROR_SESSION_GONE = "The session it appends to was deleted; choose another one or a new session per run."
ERROR_EXPIRED = "Nobody answered the approval within {hours} h, so the run ended."


class OwnerGone(Exception):
    pass


def retry_delay(attempt: int) -> timedelta:
    """Backoff before attempt `attempt + 1`: APTIX_AUTOMATION_RETRY_SECONDS, doubled per attempt."""
    return timedelta(seconds=settings.APTIX_AUTOMATION_RETRY_SECONDS * (2 ** max(attempt - 1, 0)))


# --- claiming -----------------------------------------------------------------------------------


def run_claim(
    automation: Automation,
    *,
    trigger: str,
    scheduled_for: datetime | None = None,
    payload: dict[str, Any] | None = None,
    attempt: int = 1,
    missed: bool = False,
) -> AutomationRun | None:
    """The run's row, or None when another process claimed this scheduled time already. While a run
    of the automation still goes, the new one is skipped (overlap "skip") or waits (overlap "queue",
    begun by the scheduler once the other ends); a missed time without catch-up is recorded skipped."""
    now = timezone.now()
    run = AutomationRun(
        automation=automation, trigger=trigger, scheduled_for=scheduled_for, payload=payload or {}, attempt=attempt
    )
    busy = AutomationRun.objects.filter(automation=automation, status__in=OPEN).exists()
    if missed and not automation.catch_up:
        run.status, run.error, run.ended_at = Status.SKIPPED, ERROR_MISSED, now
    elif busy and attempt == 1 and automation.overlap == Overlap.SKIP:
        run.status, run.error, run.ended_at = Status.SKIPPED, ERROR_SKIPPED_OVERLAP, now
    try:
        with transaction.atomic():
            run.save(force_insert=True)
    except IntegrityError:
        return None  # another process took this scheduled time
    return run


def runs_waiting_to_begin() -> list[AutomationRun]:
    """Queued runs (overlap "queue", or claimed by a process that stopped before beginning them)
    whose automation has no other run going: the oldest of each."""
    going = AutomationRun.objects.filter(status__in=OPEN[1:]).values("automation_id")
    queued = (
        AutomationRun.objects.filter(status=Status.QUEUED, turn__isnull=True)
        .exclude(automation_id__in=going)
        .select_related("automation", "automation__team", "automation__owner", "automation__project")
        .order_by("created_at")
    )
    first: dict[str, AutomationRun] = {}
    for run in queued:
        first.setdefault(run.automation_id, run)
    return list(first.values())


# --- beginning ----------------------------------------------------------------------------------


def run_begin(run: AutomationRun) -> Turn | None:
    """Give a queued run its session and turn (the caller dispatches the turn), once: a run another
    process began, or that ended, answers None. A refusal (the quota, a deleted session, a bad mode)
    ends the run failed, and its owner is told."""
    now = timezone.now()
    others = AutomationRun.objects.filter(automation_id=run.automation_id, status__in=OPEN, turn__isnull=False)
    if others.exclude(pk=run.pk).exists():
        return None  # overlap "queue": it waits for the run under way (runs_waiting_to_begin)
    # Begun by one process: a begin that died half-way (no turn after BEGIN_STALE) is taken again.
    unbegun = Q(started_at__isnull=True) | Q(started_at__lt=now - BEGIN_STALE)
    claimed = AutomationRun.objects.filter(unbegun, pk=run.pk, status=Status.QUEUED, turn__isnull=True)
    if not claimed.update(started_at=now):
        return None
    run.started_at = now
    automation = Automation.objects.select_related("team", "owner", "project", "conversation").get(pk=run.automation_id)
    try:
        owner_check(automation)
        with transaction.atomic():  # the turn and the run's link to it, or neither
            turn = _start_turn(run, automation, now)
            AutomationRun.objects.filter(pk=run.pk).update(session=turn.session, turn=turn, status=Status.RUNNING)
    except OwnerGone as gone:
        _end(run, Status.CANCELLED, str(gone))
        return None
    except ValidationError as exc:
        quota = error_code(exc) == CODE_QUOTA
        message = " ".join(exc.messages)
        _end(run, Status.FAILED, f"Refused by the usage quota: {message}" if quota else message)
        _after_failure(run, automation, retry=not quota)
        return None
    run.session, run.turn, run.status = turn.session, turn, Status.RUNNING
    return turn


def run_start(
    automation: Automation, *, trigger: str, payload: dict[str, Any] | None = None
) -> tuple[AutomationRun, Turn | None]:
    """A run asked for now (Run now, a webhook): claimed, and begun unless it was skipped (overlap
    "skip") or waits for the run still going (overlap "queue": the scheduler begins it once that one
    ends). Answers the run and the turn the caller dispatches (None: nothing to dispatch)."""
    run = run_claim(automation, trigger=trigger, payload=payload)
    assert run is not None  # only a scheduled time can be claimed twice
    if run.status != Status.QUEUED:
        return run, None
    if AutomationRun.objects.filter(automation=automation, status__in=OPEN).exclude(pk=run.pk).exists():
        return run, None
    turn = run_begin(run)
    if turn is None:
        run.refresh_from_db()
    return run, turn


def owner_check(automation: Automation) -> None:
    """Raise OwnerGone (and pause the automation, saying why) when its owner left the team or was deactivated."""
    owner = automation.owner
    if owner.is_active and Membership.objects.filter(team_id=automation.team_id, user=owner).exists():
        return
    reason = ERROR_OWNER_GONE.format(who=owner.get_username())
    automation_pause(automation=automation, by=None, reason=reason)
    raise OwnerGone(reason)


def automations_stop_for(*, user: Any, team: Any = None) -> int:
    """Stop the enabled automations `user` owns (in `team`, or in all their teams), each saying why."""
    found = Automation.objects.filter(owner_id=user, enabled=True).select_related("owner")
    if team is not None:
        found = found.filter(team_id=team)
    stopped = 0
    for automation in found:
        reason = ERROR_OWNER_GONE.format(who=automation.owner.get_username())
        automation_pause(automation=automation, by=None, reason=reason)
        stopped += 1
    return stopped


def _start_turn(run: AutomationRun, automation: Automation, now: datetime) -> Turn:
    at = run.scheduled_for or now
    text = prompt_fill(automation.prompt, at=at, timezone_name=automation.timezone, payload=run.payload)
    session = automation.conversation
    if session is not None and (session.deleted_at is not None or session.user_id != automation.owner_id):
        raise ValidationError(ERROR_SESSION_GONE)
    if session is None:
        local = at.astimezone(timezone.get_default_timezone())
        session = session_create(
            team=automation.team,
            user=automation.owner,
            mode=automation.mode or None,
            execution=automation.execution,
            title=f"{automation.name} · {local:%Y-%m-%d %H:%M}",
            project=automation.project,
        )
        if automation.model:
            AgentSession.objects.filter(pk=session.pk).update(model=automation.model)
            session.model = automation.model
    turn = turn_start(session=session, text=text, execution=automation.execution, grants=automation.allowed_tools)
    AutomationRun.objects.filter(pk=run.pk).update(prompt=text)
    run.prompt = text
    return turn


# --- following ----------------------------------------------------------------------------------


def runs_open() -> list[AutomationRun]:
    """The runs with a turn that have not ended (what the scheduler follows on each tick)."""
    return list(
        AutomationRun.objects.filter(status__in=OPEN, turn__isnull=False).select_related(
            "automation", "automation__owner", "automation__delegate", "turn", "session"
        )
    )


def run_follow(run: AutomationRun, *, now: datetime | None = None) -> None:
    """Bring the run up to its turn: paused for approval (inbox items), past its approval timeout
    (expired), ended (its status, tokens and end; retries and notices after a failure)."""
    now = now or timezone.now()
    turn = Turn.objects.filter(pk=run.turn_id).first()
    if turn is None:
        _end(run, Status.FAILED, "Its turn was deleted.")
        return
    automation = run.automation
    if turn.status == Turn.Status.AWAITING_APPROVAL:
        pending = list(ToolApproval.objects.filter(turn=turn, decision="").order_by("requested_at"))
        if pending and now - pending[0].requested_at > timedelta(hours=automation.approval_timeout_hours):
            _expire(run, turn, automation)
            return
        _set_status(run, Status.AWAITING_APPROVAL)
        inbox.approvals_arrived(run, pending)
        return
    inbox.approvals_settled(run)
    if turn.status in (Turn.Status.QUEUED, Turn.Status.RUNNING, Turn.Status.REQUIRES_ACTION):
        _set_status(run, turn.status if turn.status != Turn.Status.QUEUED else Status.RUNNING)
        return
    tokens = turn.prompt_tokens + turn.completion_tokens
    AutomationRun.objects.filter(pk=run.pk).update(tokens=tokens)
    run.tokens = tokens
    if not _end(run, turn.status, turn.error):
        return
    if turn.status in (Turn.Status.FAILED,):
        _after_failure(run, automation, retry=True)
    elif turn.status in (Turn.Status.COMPLETED, Turn.Status.LIMIT_REACHED):
        Automation.objects.filter(pk=automation.pk).update(failures_in_row=0)


def _expire(run: AutomationRun, turn: Turn, automation: Automation) -> None:
    reason = ERROR_EXPIRED.format(hours=automation.approval_timeout_hours)
    turn_end_waiting(turn, decision=ToolApproval.Decision.EXPIRED, reason=reason)
    if _end(run, Status.EXPIRED, reason):
        inbox.approvals_settled(run)
        inbox.notice(run, f"{automation.name}: {reason}")


def _set_status(run: AutomationRun, status: str) -> None:
    if run.status != status:
        AutomationRun.objects.filter(pk=run.pk, status__in=OPEN).update(status=status)
        run.status = status


def _end(run: AutomationRun, status: str, error: str = "") -> bool:
    """End the run once (False when it had ended already: another process followed it first)."""
    now = timezone.now()
    ended = (
        AutomationRun.objects.filter(pk=run.pk)
        .filter(Q(status__in=OPEN))
        .update(status=status, error=error[:2000], ended_at=now)
    )
    run.status, run.error, run.ended_at = status, error, now
    return bool(ended)


def _after_failure(run: AutomationRun, automation: Automation, *, retry: bool) -> None:
    """A failed attempt: retried after a backoff while attempts are left; else the owner is told, and
    the third failed run in a row pauses the automation."""
    if retry and run.attempt <= automation.max_retries:
        retry_at = timezone.now() + retry_delay(run.attempt)
        AutomationRun.objects.filter(pk=run.pk).update(retry_at=retry_at)
        run.retry_at = retry_at
        return
    failures = automation.failures_in_row + 1
    Automation.objects.filter(pk=automation.pk).update(failures_in_row=failures)
    automation.failures_in_row = failures
    tries = f" after {run.attempt} attempts" if run.attempt > 1 else ""
    inbox.notice(run, f"{automation.name}: the run failed{tries}. {run.error}".strip())
    if failures >= FAILURES_TO_PAUSE:
        reason = ERROR_PAUSED_FAILURES.format(n=failures, error=run.error)[:255]
        automation_pause(automation=automation, by=None, reason=reason)
        inbox.notice(run, f"{automation.name}: {reason}")


def retries_due(now: datetime) -> list[AutomationRun]:
    """The next attempts of failed runs whose backoff has passed, each claimed once (its row made)."""
    due = AutomationRun.objects.filter(status=Status.FAILED, retry_at__lte=now).select_related("automation")
    made = []
    for failed in due:
        if not AutomationRun.objects.filter(pk=failed.pk, retry_at__isnull=False).update(retry_at=None):
            continue  # another process took it
        if not failed.automation.enabled:
            continue
        run = run_claim(
            failed.automation,
            trigger=failed.trigger,
            scheduled_for=failed.scheduled_for,
            payload=failed.payload,
            attempt=failed.attempt + 1,
        )
        if run is not None:
            made.append(run)
    return made


def run_json(run: AutomationRun) -> dict[str, Any]:
    """A run as the API shows it."""
    return {
        "id": run.pk,
        "trigger": run.trigger,
        "scheduledFor": run.scheduled_for.isoformat() if run.scheduled_for else None,
        "status": run.status,
        "attempt": run.attempt,
        "conversationId": run.session_id,
        "turnId": run.turn_id,
        "startedAt": run.started_at.isoformat() if run.started_at else None,
        "endedAt": run.ended_at.isoformat() if run.ended_at else None,
        "tokens": run.tokens,
        "error": run.error,
    }
