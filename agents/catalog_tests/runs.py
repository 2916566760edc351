"""Catalog test runs as records (sync services: the database): start, look at, stop and delete a
curator's run, and its JSON (the API's and the page's). What a run does is execute.py's.

Who may: a user with the permission to change or to publish agent modes (a superuser has both);
anyone else is refused with `ERROR_NOT_CURATOR` before anything is read. Runs are the catalog's, not
a user's: every curator sees every run."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.utils import timezone

from modes.catalog import active_modes
from modes.versions import can_curate, can_publish

from ..llm.catalog import models_config
from ..models import AgentSession, CatalogTestRun, Turn
from ..sessions import session_delete
from .cases import routing_team
from .compare import drafts_applied_versions

ERROR_NOT_CURATOR = "Catalog tests need the permission to change or to publish agent modes."
ERROR_CATALOG = "'catalog' must be one of: {choices}."
ERROR_KIND = "'kind' must be one of: {choices}."
ERROR_MODEL = "Unknown model {model!r}. Available: {available}."
ERROR_NOT_FOUND = "No catalog test run {run_id!r}."
ERROR_DELETE_RUNNING = "The run is still going: stop it first, then delete it."
ERROR_LOST = "The process running this test stopped before it finished (a restart or a crash)."
# A running run's process writes a heartbeat at least this often (execute.py); twice that without
# one, and the run is over (ERROR_LOST): nobody would ever finish it.
HEARTBEAT = timedelta(seconds=5)
LOST_AFTER = HEARTBEAT * 6


def may_test(user: Any) -> bool:
    return bool(user and user.is_authenticated and user.is_active and (can_curate(user) or can_publish(user)))


def _curator(user: Any) -> None:
    if not may_test(user):
        raise PermissionDenied(ERROR_NOT_CURATOR)


def published_versions(team: Any) -> dict[str, int]:
    """The published version of every active mode `team` may use: what a run over them tested."""
    return {mode.key: mode.version for mode in active_modes(team=team)}


def test_run_create(
    *, user: Any, catalog: Any = "published", kind: Any = "routing", model: Any = None
) -> CatalogTestRun:
    """A queued run by `user` (its turns, usage and quota are theirs) in their first team; the caller
    launches it (execute.py `test_run_launch`). A bad field is a ValidationError naming it."""
    _curator(user)
    if catalog not in CatalogTestRun.Catalog.values:
        raise ValidationError({"catalog": ERROR_CATALOG.format(choices=", ".join(CatalogTestRun.Catalog.values))})
    if kind not in CatalogTestRun.Kind.values:
        raise ValidationError({"kind": ERROR_KIND.format(choices=", ".join(CatalogTestRun.Kind.values))})
    if model is not None and not isinstance(model, str):
        raise ValidationError({"model": "'model' must be a key of the models configuration, or null."})
    model = (model or "").strip()
    config = models_config()
    if model and config.get(model) is None:
        raise ValidationError({"model": ERROR_MODEL.format(model=model, available=", ".join(config.models))})
    team = routing_team(user=user)
    versions: dict[str, Any] = {"published": published_versions(team)}
    if catalog != CatalogTestRun.Catalog.PUBLISHED:
        versions["drafts"] = drafts_applied_versions()
    return CatalogTestRun.objects.create(
        team=team, started_by=user, catalog=catalog, kind=kind, model=model, versions=versions
    )


def test_run_get(*, user: Any, run_id: str) -> CatalogTestRun:
    """The run, for a curator; a run whose process is gone is ended as failed on the way (`ERROR_LOST`)."""
    _curator(user)
    run = CatalogTestRun.objects.select_related("started_by").filter(pk=str(run_id)).first()
    if run is None:
        raise ValidationError(ERROR_NOT_FOUND.format(run_id=str(run_id)), code="not_found")
    return test_run_expire(run)


def test_run_list(*, user: Any, limit: int = 50) -> list[CatalogTestRun]:
    _curator(user)
    return [test_run_expire(run) for run in CatalogTestRun.objects.select_related("started_by")[:limit]]


def test_run_expire(run: CatalogTestRun) -> CatalogTestRun:
    """End a running run no process drives any longer: its heartbeat stopped."""
    if run.status != CatalogTestRun.Status.RUNNING:
        return run
    last = run.heartbeat_at or run.started_at or run.created_at
    if timezone.now() - last < LOST_AFTER:
        return run
    CatalogTestRun.objects.filter(pk=run.pk, status=CatalogTestRun.Status.RUNNING).update(
        status=CatalogTestRun.Status.FAILED, error=ERROR_LOST, finished_at=timezone.now()
    )
    run.refresh_from_db()
    return run


def test_run_stop(*, user: Any, run: CatalogTestRun) -> CatalogTestRun:
    """Ask the run to stop: a queued one stops at once; a running one within half a second (its
    process watches the flag), its cases' turns cancelled; what finished stays in its results."""
    _curator(user)
    with transaction.atomic():
        locked = CatalogTestRun.objects.select_for_update().get(pk=run.pk)
        if not locked.is_finished:
            locked.stop_requested = True
            fields = ["stop_requested"]
            if locked.status == CatalogTestRun.Status.QUEUED:
                locked.status, locked.finished_at = CatalogTestRun.Status.STOPPED, timezone.now()
                fields += ["status", "finished_at"]
            locked.save(update_fields=fields)
    return locked


def test_run_delete(*, user: Any, run: CatalogTestRun) -> None:
    """Delete a finished run with its results; its sessions (already deleted for everyone as their
    cases ended) are let go of it."""
    _curator(user)
    run = test_run_expire(run)
    if not run.is_finished:
        raise ValidationError(ERROR_DELETE_RUNNING, code="state")
    run_sessions_delete(run_id=run.pk)
    run.delete()


def run_sessions_delete(*, run_id: str) -> int:
    """Delete the run's sessions not deleted yet (a case cut short by a stop); those whose turn still
    runs are left for the next call. The number deleted."""
    count = 0
    live = AgentSession.objects.filter(catalog_run_id=run_id, deleted_at__isnull=True)
    for session in live:
        try:
            session_delete(session=session)
        except ValidationError:  # a turn still running (ERROR_SESSION_BUSY): the stop cancels it first
            continue
        count += 1
    return count


def run_turns_open(*, run_id: str) -> list[Turn]:
    """The run's cases' turns that have not ended (to cancel on a stop)."""
    return list(Turn.objects.select_related("session").filter(session__catalog_run_id=run_id, finished_at__isnull=True))


def user_turns_live() -> bool:
    """Whether any person's turn (not a catalog test's) is queued or running: runs yield to them."""
    live = (Turn.Status.QUEUED, Turn.Status.RUNNING)
    return Turn.objects.filter(status__in=live, session__catalog_test=False).exists()


# --- the run as JSON (the API's and the page's) -------------------------------------------------------


def _case_json(case: dict[str, Any]) -> dict[str, Any]:
    return {
        "utterance": case["utterance"],
        "expected": case["expected"],
        "got": case["got"],
        "ok": case["ok"],
        "mode": case.get("mode", ""),
        "tokens": case.get("tokens", 0),
        "seconds": case.get("seconds", 0.0),
    }


def _check_json(check: dict[str, Any]) -> dict[str, Any]:
    return {
        "mode": check["mode"],
        "prompt": check["prompt"],
        "execution": check.get("execution", ""),
        "ok": check["ok"],
        "failed": list(check.get("failed") or []),
        "approved": list(check.get("approved") or []),
        "status": check.get("status", ""),
        "tokens": check.get("tokens", 0),
        "seconds": check.get("seconds", 0.0),
    }


def catalog_part(run: CatalogTestRun, catalog: str) -> dict[str, Any]:
    """One catalog's results of the run ("published" or "drafts"): cases, checks, modes, accuracy, matrix."""
    part = (run.results or {}).get(catalog) or {}
    routing = part.get("routing") or {}
    return {
        "accuracy": routing.get("accuracy"),
        "cases": [_case_json(case) for case in routing.get("cases") or []],
        "checks": [_check_json(check) for check in part.get("checks") or []],
        "modes": routing.get("modes") or {},
        "matrix": routing.get("matrix") or {},
    }


def main_catalog(run: CatalogTestRun) -> str:
    """The catalog whose results the run answers with: the drafts' when it ran them (alone or compared)."""
    return "published" if run.catalog == CatalogTestRun.Catalog.PUBLISHED else "drafts"


def test_run_json(run: CatalogTestRun) -> dict[str, Any]:
    main = catalog_part(run, main_catalog(run))
    body: dict[str, Any] = {
        "id": run.pk,
        "status": run.status,
        "catalog": run.catalog,
        "kind": run.kind,
        "model": run.model or None,
        "progress": {"done": run.done, "total": run.total},
        **main,
        "checksFailed": run.checks_failed,
        "tokens": run.tokens,
        "versions": run.versions or {},
        "error": run.error or None,
        "startedBy": run.started_by.get_username() if run.started_by_id else None,
        "createdAt": run.created_at.isoformat(),
        "finishedAt": run.finished_at.isoformat() if run.finished_at else None,
    }
    if run.catalog == CatalogTestRun.Catalog.COMPARE:
        body["published"] = catalog_part(run, "published")
        changed = (run.results or {}).get("changed") or {}
        body["changed"] = {"cases": changed.get("cases") or [], "checks": changed.get("checks") or []}
    return body


# --- what the publish and review pages show of a draft ------------------------------------------------


def last_comparison(*, mode_key: str, number: int) -> dict[str, Any] | None:
    """The latest finished comparison (published catalog against the drafts) that ran with version
    `number` of `mode_key` as its draft: both accuracies, whether the drafts lowered accuracy, and the
    checks that passed on the published catalog and fail with the drafts. None when none ran."""
    runs = CatalogTestRun.objects.filter(
        catalog=CatalogTestRun.Catalog.COMPARE, status=CatalogTestRun.Status.DONE
    ).filter(**{f"versions__drafts__{mode_key}": number})
    run = runs.order_by("-created_at").first()
    if run is None:
        return None
    body = test_run_json(run)
    before, after = body["published"]["accuracy"], body["accuracy"]
    broken = body["changed"]["checks"]
    return {
        "run": run,
        "published": before,
        "drafts": after,
        "dropped": before is not None and after is not None and after < before,
        "broken_checks": broken,
        "changed_cases": len(body["changed"]["cases"]),
        "warn": (before is not None and after is not None and after < before) or bool(broken),
    }
