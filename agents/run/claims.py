"""Who runs a turn, when runs go through the queue (agents/run/queue.py) to worker processes.

The queue delivers a run at least once. The database decides who runs it: a dispatch writes a new
token on the turn (and clears its worker); a worker claims the run with one conditional UPDATE on
that token, an unclaimed row and a claimable status, so of two deliveries of one dispatch only one
claim succeeds and the other is a no-op. The claim holds until `lease_until`; the run's heartbeat
renews it while the run holds it, and stops the run when it no longer does (a sweeper ended or
re-queued the turn). A run is re-queued only where that is safe: a turn still `queued` (its worker
died before the run started); a running turn whose lease expired is ended as interrupted.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timedelta

from django.conf import settings
from django.db.models import Q
from django.utils import timezone

from aptix.ids import new_hex_id

from ..models import Turn

Status = Turn.Status
CLAIMABLE = (Status.QUEUED, Status.REQUIRES_ACTION, Status.AWAITING_APPROVAL)


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
    claimed = Turn.objects.filter(pk=turn_id, dispatch=dispatch, worker="", status__in=CLAIMABLE).update(
        worker=worker, lease_until=now + lease(), heartbeat_at=now
    )
    return bool(claimed)


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
