"""JSON API for the catalog's tests (agents/catalog_tests): start a run, follow it, stop it, delete it.

`POST /api/v1/catalog/test-runs` `{"catalog": "published"|"drafts"|"compare", "kind":
"routing"|"checks"|"both", "model": <models.json key or null>}` → 202 `{"id", "status"}`; the run goes
on in the background. `GET /api/v1/catalog/test-runs` lists the latest runs; `GET …/<id>` →
`{"status", "accuracy", "cases", "checks", "modes", "progress", …}` (runs.py `test_run_json`); `POST
…/<id>/stop`; `DELETE …/<id>` (a finished run). Bearer token first; without the permission to change
or to publish agent modes, 403 before anything is read.
"""

from __future__ import annotations

from typing import Any

from asgiref.sync import sync_to_async
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.csrf import csrf_exempt

from ..catalog_tests.execute import test_run_launch
from ..catalog_tests.runs import (
    test_run_create,
    test_run_delete,
    test_run_get,
    test_run_json,
    test_run_list,
    test_run_stop,
)
from .api_support import ApiError, authenticate, json_body

STATUS_OF_CODE = {"not_found": 404, "state": 409}


def _refused(exc: Exception) -> ApiError:
    if isinstance(exc, PermissionDenied):
        return ApiError(403, str(exc))
    assert isinstance(exc, ValidationError)
    return ApiError.refused(exc, statuses=STATUS_OF_CODE)


def _create(user: Any, raw: bytes) -> Any:
    body = json_body(raw) if raw.strip() else {}
    unknown = sorted(set(body) - {"catalog", "kind", "model"})
    if unknown:
        raise ApiError(400, f"Unknown field '{unknown[0]}'.", unknown[0])
    return test_run_create(
        user=user,
        catalog=body.get("catalog", "published"),
        kind=body.get("kind", "routing"),
        model=body.get("model"),
    )


def _brief(run: Any) -> dict[str, Any]:
    return {
        "id": run.pk,
        "status": run.status,
        "catalog": run.catalog,
        "kind": run.kind,
        "model": run.model or None,
        "accuracy": run.accuracy,
        "checksFailed": run.checks_failed,
        "progress": {"done": run.done, "total": run.total},
        "createdAt": run.created_at.isoformat(),
    }


@csrf_exempt
async def test_runs_api(request: HttpRequest) -> JsonResponse:
    try:
        user = await authenticate(request)  # auth before anything else
        if request.method == "GET":
            runs = await sync_to_async(test_run_list)(user=user)
            return JsonResponse({"runs": [_brief(run) for run in runs]})
        if request.method != "POST":
            raise ApiError(405, "Use GET or POST.")
        run = await sync_to_async(_create)(user, request.body)
        test_run_launch(run.pk)
        return JsonResponse({"id": run.pk, "status": run.status}, status=202)
    except (PermissionDenied, ValidationError) as exc:
        return _refused(exc).response()
    except ApiError as exc:
        return exc.response()


@csrf_exempt
async def test_run_api(request: HttpRequest, run_id: str) -> HttpResponse:
    try:
        user = await authenticate(request)
        if request.method not in ("GET", "DELETE"):
            raise ApiError(405, "Use GET or DELETE.")
        run = await sync_to_async(test_run_get)(user=user, run_id=run_id)
        if request.method == "DELETE":
            await sync_to_async(test_run_delete)(user=user, run=run)
            return HttpResponse(status=204)
        return JsonResponse(await sync_to_async(test_run_json)(run))
    except (PermissionDenied, ValidationError) as exc:
        return _refused(exc).response()
    except ApiError as exc:
        return exc.response()


@csrf_exempt
async def test_run_stop_api(request: HttpRequest, run_id: str) -> JsonResponse:
    try:
        user = await authenticate(request)
        if request.method != "POST":
            raise ApiError(405, "Use POST.")
        run = await sync_to_async(test_run_get)(user=user, run_id=run_id)
        run = await sync_to_async(test_run_stop)(user=user, run=run)
        return JsonResponse({"id": run.pk, "status": run.status, "stopRequested": run.stop_requested})
    except (PermissionDenied, ValidationError) as exc:
        return _refused(exc).response()
    except ApiError as exc:
        return exc.response()
