"""The automations on the JSON API (bearer token, agents/web/api_support.py): `GET|POST
/api/v1/automations`, `GET|PATCH|DELETE /api/v1/automations/<id>`, `POST …/<id>/run`, `POST
…/<id>/trigger` (the webhook), `GET …/<id>/runs` and `GET /api/v1/inbox`.

An automation is its owner's alone: anyone else's token (another team's, a teammate's) gets the 404 an
unknown id gets, on every endpoint. A webhook call without a bearer token is judged by its signature
only (automations/webhooks.py): whatever the id — unknown, without a webhook, or known with a wrong,
old or replayed signature — the answer is a 401 saying what was wrong with the signature, never
whether the id exists, and nothing runs. Only a caller holding the secret learns more (a paused
automation: 409; a body that is not a JSON object: 400).

A run asked for now answers 202 with the run (running, or queued behind the run still going with
overlap "queue"); a run skipped because the previous one still goes (overlap "skip"), or refused as
it began (the usage quota, its owner gone: its "error" says why), answers 200 with that status:
nothing will run."""

from __future__ import annotations

from typing import Any

from asgiref.sync import sync_to_async
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.csrf import csrf_exempt

from agents.runner import get_runner
from agents.web.api import api_team
from agents.web.api_support import ApiError, authenticate, json_body
from aptix.ratelimits import BAD_TOKENS, TURNS, address_key, rate_limit, user_key
from automations.inbox import inbox_approvals, inbox_item_json
from automations.models import Automation, AutomationRun
from automations.runs import run_json, run_start
from automations.selectors import runs_of
from automations.services import (
    AutomationNotFoundError,
    automation_create,
    automation_delete,
    automation_get,
    automation_json,
    automation_update,
    automations_of,
)
from automations.webhooks import SIGNATURE_HEADER, TIMESTAMP_HEADER, SignatureRefused, webhook_accept
from projects.services import ProjectNotFoundError, project_get

NOT_FOUND = "No automation with this id."
ERROR_NO_TEAM = "You are not a member of any team; ask an administrator to add you."
ERROR_PAUSED = 'The automation {name!r} is paused{why}: resume it with PATCH {{"enabled": true}} first.'
ERROR_NO_WEBHOOK = (
    'The automation {name!r} has no webhook: turn it on with PATCH {{"webhook": true}}, '
    "or start a run with POST /api/v1/automations/<id>/run."
)
ERROR_LIMIT = "'limit' must be a whole number from 1 to {most}."
RUNS_DEFAULT, RUNS_MOST = 50, 100


class MethodNotAllowed(ApiError):
    def __init__(self, *methods: str) -> None:
        super().__init__(405, f"Use {' or '.join(methods)}.")
        self.allow = ", ".join(methods)

    def response(self) -> JsonResponse:
        response = super().response()
        response["Allow"] = self.allow
        return response


async def _call(function: Any, *args: Any, **kwargs: Any) -> Any:
    """A sync service on a worker thread, its refusals as the API's errors."""
    try:
        return await sync_to_async(function)(*args, **kwargs)
    except AutomationNotFoundError:
        raise ApiError(404, NOT_FOUND, "id") from None
    except ValidationError as exc:
        raise ApiError.refused(exc) from None


# --- the automations ----------------------------------------------------------------------------


def _list(user: Any) -> dict[str, Any]:
    return {"automations": [automation_json(a) for a in automations_of(user=user)]}


def _team(user: Any, project_id: Any) -> Any:
    """The new automation's team: its project's (the service checks the project), else the user's."""
    if isinstance(project_id, str) and project_id:
        try:
            return project_get(user=user, project_id=project_id).team
        except ProjectNotFoundError:
            pass  # automation_create names the field
    team = api_team(user)
    if team is None:
        raise ApiError(403, ERROR_NO_TEAM)
    return team


def _create(user: Any, body: dict[str, Any]) -> dict[str, Any]:
    automation, secret = automation_create(user=user, team=_team(user, body.get("projectId")), data=body)
    answer = automation_json(automation)
    if secret is not None:
        answer["webhookSecret"] = secret  # shown this once: it is derived, never stored nor shown again
    return answer


def _read(user: Any, automation_id: str) -> dict[str, Any]:
    return automation_json(automation_get(user=user, automation_id=automation_id))


def _patch(user: Any, automation_id: str, body: dict[str, Any]) -> dict[str, Any]:
    automation = automation_get(user=user, automation_id=automation_id)
    automation, secret = automation_update(user=user, automation=automation, data=body)
    answer = automation_json(automation)
    if secret is not None:
        answer["webhookSecret"] = secret  # the webhook was just turned on: its new secret, once
    return answer


def _delete(user: Any, automation_id: str) -> None:
    automation_delete(automation=automation_get(user=user, automation_id=automation_id), by=user)


@csrf_exempt
async def automations(request: HttpRequest) -> JsonResponse:
    try:
        user = await authenticate(request)
        if request.method == "GET":
            return JsonResponse(await _call(_list, user))
        if request.method != "POST":
            raise MethodNotAllowed("GET", "POST")
        return JsonResponse(await _call(_create, user, json_body(request.body)), status=201)
    except ApiError as exc:
        return exc.response()


@csrf_exempt
async def automation(request: HttpRequest, automation_id: str) -> HttpResponse:
    try:
        user = await authenticate(request)
        if request.method == "GET":
            return JsonResponse(await _call(_read, user, automation_id))
        if request.method == "PATCH":
            body = json_body(request.body)
            return JsonResponse(await _call(_patch, user, automation_id, body))
        if request.method == "DELETE":
            await _call(_delete, user, automation_id)
            return HttpResponse(status=204)
        raise MethodNotAllowed("GET", "PATCH", "DELETE")
    except ApiError as exc:
        return exc.response()


# --- runs ---------------------------------------------------------------------------------------


def _ready(automation: Automation) -> None:
    if not automation.enabled:
        why = f" ({automation.paused_reason})" if automation.paused_reason else ""
        raise ApiError(409, ERROR_PAUSED.format(name=automation.name, why=why), "enabled")


async def _start(request: HttpRequest, automation: Automation, *, trigger: str, payload: dict | None) -> JsonResponse:
    """Claim and begin a run (counted against the owner's turn rate), dispatch its turn on this
    process's runner, and answer the run: 202, or 200 when it was skipped."""
    if limited := await sync_to_async(rate_limit)(TURNS, user_key(automation.owner), request):
        raise ApiError.too_many(limited)
    run, turn = await _call(run_start, automation, trigger=trigger, payload=payload)
    if turn is not None:
        get_runner().start(turn.id)
    # 202: a turn is under way, or the run waits its turn (overlap "queue"); 200: nothing will run
    # (skipped while the previous run goes; refused at its start, the quota say: its error says why).
    status = 202 if turn is not None or run.status == AutomationRun.Status.QUEUED else 200
    return JsonResponse(run_json(run), status=status)


@csrf_exempt
async def automation_run(request: HttpRequest, automation_id: str) -> JsonResponse:
    try:
        user = await authenticate(request)
        if request.method != "POST":
            raise MethodNotAllowed("POST")
        automation = await _call(automation_get, user=user, automation_id=automation_id)
        _ready(automation)
        return await _start(request, automation, trigger=AutomationRun.Trigger.MANUAL, payload=None)
    except ApiError as exc:
        return exc.response()


def _payload(raw: bytes) -> dict[str, Any]:
    """A webhook's body: a JSON object (its fields fill {payload.<field>}), or nothing at all."""
    if not raw.strip():
        return {}
    try:
        return json_body(raw)
    except ApiError as exc:
        message = f"{exc.message} Its fields fill {{payload.<field>}}; an empty body is fine too."
        raise ApiError(400, message, exc.field) from None


async def _signed(request: HttpRequest, automation_id: str) -> Automation:
    """The automation a signed call names, its signature accepted (once), or a 401 saying why. Refused
    signatures count against the caller's address like invalid tokens (429 past the limit)."""
    address = address_key(request)
    if limited := await sync_to_async(rate_limit)(BAD_TOKENS, address, request, count=False):
        raise ApiError.too_many(limited)
    try:
        return await sync_to_async(webhook_accept)(
            automation_id,
            timestamp=request.headers.get(TIMESTAMP_HEADER),
            signature=request.headers.get(SIGNATURE_HEADER),
            body=request.body,
        )
    except SignatureRefused as refused:
        if limited := await sync_to_async(rate_limit)(BAD_TOKENS, address, request):
            raise ApiError.too_many(limited) from None
        raise ApiError(401, str(refused), SIGNATURE_HEADER) from None


@csrf_exempt
async def automation_trigger(request: HttpRequest, automation_id: str) -> JsonResponse:
    """The webhook: a bearer token of the owner, or the signature headers (no token)."""
    try:
        if "Authorization" in request.headers:
            user = await authenticate(request)
            if request.method != "POST":
                raise MethodNotAllowed("POST")
            automation = await _call(automation_get, user=user, automation_id=automation_id)
            if not automation.webhook:
                raise ApiError(409, ERROR_NO_WEBHOOK.format(name=automation.name), "webhook")
        else:
            if request.method != "POST":
                raise MethodNotAllowed("POST")
            automation = await _signed(request, automation_id)
        payload = _payload(request.body)
        _ready(automation)
        return await _start(request, automation, trigger=AutomationRun.Trigger.WEBHOOK, payload=payload)
    except ApiError as exc:
        return exc.response()


def _limit(value: str | None) -> int:
    if value is None:
        return RUNS_DEFAULT
    if not value.isdigit() or not 1 <= int(value) <= RUNS_MOST:
        raise ApiError(400, ERROR_LIMIT.format(most=RUNS_MOST), "limit")
    return int(value)


def _runs(user: Any, automation_id: str, limit: int) -> dict[str, Any]:
    automation = automation_get(user=user, automation_id=automation_id)
    return {"runs": [run_json(run) for run in runs_of(automation=automation, limit=limit)]}


@csrf_exempt
async def automation_runs(request: HttpRequest, automation_id: str) -> JsonResponse:
    try:
        user = await authenticate(request)
        if request.method != "GET":
            raise MethodNotAllowed("GET")
        limit = _limit(request.GET.get("limit"))
        return JsonResponse(await _call(_runs, user, automation_id, limit))
    except ApiError as exc:
        return exc.response()


# --- the inbox ----------------------------------------------------------------------------------


def _inbox(user: Any) -> list[dict[str, Any]]:
    return [inbox_item_json(item) for item in inbox_approvals(user=user)]


@csrf_exempt
async def inbox(request: HttpRequest) -> JsonResponse:
    """The approvals waiting for the token's user: a JSON list, newest first. Each is decided with the
    approvals body of POST /api/v1/agent/execute (its conversationId and toolCallId)."""
    try:
        user = await authenticate(request)
        if request.method != "GET":
            raise MethodNotAllowed("GET")
        return JsonResponse(await _call(_inbox, user), safe=False)
    except ApiError as exc:
        return exc.response()
