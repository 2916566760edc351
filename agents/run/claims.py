"""Who runs a turn, when runs go through the queue (agents/run/queue.py) to worker processes.

The queue delivers a run at least once. The database decides who runs it: a dispatch writes a new
token on the turn (and clears its worker); a worker claims the run with one conditional UPDATE on
that token, an unclaimed row and a claimable status, so of two deliveries of one dispatch only one
claim succeeds and the other is a no-op. The claim holds until `lease_until`; the run's heartbeat
renews it while the run holds it, and stops the run when it no longer does (a sweeper ended or
re-queued the turn). A run is re-queued only where that is safe: a turn still `queued` (its worker
died before the run started), and a running turn whose worker died while an MCP server reached over
HTTP ran one of its calls as a task (the turn's state holds the task: `run_resume_tasks`; the next run
follows the task by its id, agents/run/tool_calls.py); any other running turn whose lease expired is
ended as interrupted.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from aptix.ids import new_hex_id

from ..models import Turn
from ..state import OpenTask

Status = Turn.Status
CLAIMABLE = (Status.QUEUED, Status.REQUIRES_ACTION, Status.AWAITING_APPROVAL)
# A running turn handed on to another process to follow its MCP task (run_resume_tasks)
RESUMABLE = Q(status=Status.RUNNING, state__task__resumable=True)
MAX_TASK_RESUMES = 3  # a task whose runs keep dying is given up: the turn ends (task_lost)
TASK_LOST = (
    'This turn was interrupted: the process running it stopped while the MCP server "{server}" ran '
    "{tool} as a task, and {why}."
)


# --- leases (which turns are orphans is the runner's call; agents/turns.py ends them) -----------------

ORPHAN_QUEUED_AFTER = timedelta(minutes=1)
LEASE_HEARTBEATS = 6  # a running turn silent for this many heartbeat intervals lost its process


def lease() -> timedelta:
    return timedelta(seconds=settings.APTIX_RUN_HEARTBEAT * LEASE_HEARTBEATS)


def orphan_queued_too_long(turn: Turn, now: datetime) -> bool:
    return turn.status == Status.QUEUED and now - turn.created_at > ORPHAN_QUEUED_AFTER


def lease_expired(turn: Turn, now: datetime) -> bool:
    """Whether the process running the turn stopped renewing its claim (a worker's `lease_until`, or
    the heartbeat where no worker claimed it)."""
    if turn.lease_until is not None:
        return now > turn.lease_until
    return now - (turn.heartbeat_at or turn.started_at or turn.created_at) > lease()


# --- dispatches and claims ----------------------------------------------------------------------------


def run_dispatch(turn_id: str) -> str:
    """A new dispatch of the turn's run: its token, which the worker that runs it must claim."""
    token = new_hex_id()
    Turn.objects.filter(pk=turn_id).update(dispatch=token, worker="", lease_until=None)
    return token


def run_claim(turn_id: str, dispatch: str, worker: str, now: datetime | None = None) -> bool:
    """Claim the dispatched run for `worker`: True for exactly one caller per dispatch."""
    now = now or timezone.now()
    claimable = Q(status__in=CLAIMABLE) | RESUMABLE
    claimed = Turn.objects.filter(claimable, pk=turn_id, dispatch=dispatch, worker="").update(
        worker=worker, lease_until=now + lease(), heartbeat_at=now
    )
    return bool(claimed)


def run_claims(dispatched: list[tuple[str, str]], worker: str) -> list[bool]:
    """Claim each (turn id, dispatch) for `worker` (run_claim), in order: whether each claim is ours
    (one delivered twice in the same read is ours once)."""
    now = timezone.now()
    return [run_claim(turn_id, dispatch, worker, now) for turn_id, dispatch in dispatched]


# A worker claims on a thread of its own (worker.py): on asgiref's shared sync thread each claim waited
# behind the database calls of every run already started, so 50 runs read at once started one by one
# (queued p50 1.0 s, p95 2.0 s in the scale-out bench).
claims_executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="aptix-claim")

# Renewals run on a thread of their own (leases.py): on asgiref's shared sync thread they queued behind
# every run's database calls, and a burst of runs starting at once let leases lapse under live runs.
renewals_executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="aptix-lease")


def stalled_queued(now: datetime) -> dict[str, str]:
    """Queued turns whose claim expired, with the worker that holds it: safe to run again if that
    worker is gone (nothing of them ran). A run writes its start with its first batch of events, so
    a busy worker's run can still look queued: the caller asks whether the worker lives
    (queue.alive), and only a claim expired for a whole further lease counts."""
    expired = Q(lease_until__lt=now - lease()) & ~Q(worker="")
    return dict(Turn.objects.filter(expired, status=Status.QUEUED).values_list("pk", "worker"))


def unheld(turn: Turn, now: datetime) -> bool:
    """Whether no worker holds the open turn: never claimed, or its claim expired (a Stop then ends it
    at once instead of waiting for a worker that will not come)."""
    if turn.is_paused or turn.is_finished:
        return True
    return not turn.worker or (turn.lease_until is not None and now > turn.lease_until)


# --- MCP tasks of runs whose process died --------------------------------------------------------


def task_lost(turn: Turn) -> str | None:
    """Why a running turn whose process died cannot follow its task elsewhere (None: it has none)."""
    task = OpenTask.of(turn)
    if task is None:
        return None
    if not task.resumable:
        why = "a stdio server stops with the process that started it, so the task is gone"
    elif task.resumes >= MAX_TASK_RESUMES:
        why = f"it was lost again after {task.resumes} restarts"
    else:
        why = "no process took the task over"
    return TASK_LOST.format(server=task.server, tool=task.call["name"] or "a tool", why=why)


def run_resume_tasks(held: Callable[[Turn], bool], now: datetime | None = None) -> list[str]:
    """Running turns whose call waits for a task of an HTTP server, and that no process holds any more
    (`held`: the runner's call): each is made claimable again (a fresh heartbeat, no worker) and its
    count of resumes raised; the runner then runs it again. Past MAX_TASK_RESUMES it is left to the
    orphan sweep, which ends it (task_lost)."""
    now = now or timezone.now()
    resumed = []
    for turn in Turn.objects.filter(RESUMABLE):
        if held(turn):
            continue
        with transaction.atomic():
            locked = Turn.objects.select_for_update().filter(RESUMABLE, pk=turn.pk).first()
            task = OpenTask.of(locked) if locked is not None and not held(locked) else None
            if locked is None or task is None or task.resumes >= MAX_TASK_RESUMES:
                continue
            locked.state = {**locked.state, "task": replace(task, resumes=task.resumes + 1).to_json()}
            locked.heartbeat_at, locked.lease_until, locked.worker = now, None, ""
            locked.save(update_fields=["state", "heartbeat_at", "lease_until", "worker"])
        resumed.append(turn.pk)
    return resumed
