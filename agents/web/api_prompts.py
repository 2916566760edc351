"""The prompt library on the API (bearer token; agents/prompts/): `GET /api/v1/prompts` (the user's
own prompts and those shared with their teams), `POST /api/v1/prompts` `{"title", "text", "shared",
"team"?}` → 201, `GET|PATCH|DELETE /api/v1/prompts/<id>` and `POST /api/v1/prompts/<id>/use`
`{"variables": {…}}` (the filled text; counted). Another team's prompt is a 404 like one that does not
exist; a change only a team's curators may make is a 403 saying so. The composer's `/` menu
(views/prompts.py) lists and fills them with the same functions."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from asgiref.sync import sync_to_async
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.csrf import csrf_exempt

from agents.prompts.selectors import (
    PromptNotFoundError,
    prompt_can_edit,
    prompt_curated_team_ids,
    prompt_get,
    prompt_list,
)
from agents.prompts.services import (
    CODE_FORBIDDEN,
    UNCHANGED,
    prompt_create,
    prompt_delete,
    prompt_share_team,
    prompt_update,
    prompt_use,
)
from agents.prompts.variables import variables_in

from .api_support import ApiError, authenticate, json_body

if TYPE_CHECKING:
    from agents.models import SavedPrompt

STATUSES = {CODE_FORBIDDEN: 403}
NOT_FOUND = "No prompt with this id."
FIELDS = ("title", "text", "shared", "team")


def _iso(value: Any) -> str | None:
    return value.isoformat() if value else None


def prompt_json(prompt: SavedPrompt, *, editable: bool) -> dict[str, Any]:
    return {
        "id": prompt.pk,
        "title": prompt.title,
        "text": prompt.text,
        "shared": prompt.team_id is not None,
        "team": prompt.team.slug if prompt.team else None,
        "teamName": prompt.team.name if prompt.team else None,
        "author": prompt.user.get_username(),
        "variables": variables_in(prompt.text),
        "useCount": prompt.use_count,
        "lastUsedAt": _iso(prompt.last_used_at),
        "editable": editable,
        "createdAt": _iso(prompt.created_at),
        "updatedAt": _iso(prompt.updated_at),
    }


def prompts_json(user: Any) -> list[dict[str, Any]]:
    """What the user may use, each saying whether they may change it."""
    curated = prompt_curated_team_ids(user=user)
    return [
        prompt_json(p, editable=prompt_can_edit(user=user, prompt=p, curated=curated)) for p in prompt_list(user=user)
    ]


def _found(user: Any, prompt_id: str) -> SavedPrompt:
    try:
        return prompt_get(user=user, prompt_id=prompt_id)
    except PromptNotFoundError:
        raise ApiError(404, NOT_FOUND, "id") from None


def _team(user: Any, body: dict[str, Any]) -> Any:
    """The team `shared` asks for: a Team, None (not shared) or UNCHANGED (no `shared` sent)."""
    shared = body.get("shared", UNCHANGED)
    team = body.get("team")
    if team is not None and not isinstance(team, str):
        raise ApiError(400, "'team' must be a team's slug.", "team")
    if shared is UNCHANGED:
        if team is not None:
            raise ApiError(400, "'team' goes with \"shared\": true.", "team")
        return UNCHANGED
    if not isinstance(shared, bool):
        raise ApiError(400, "'shared' must be true or false.", "shared")
    if not shared and team is not None:
        raise ApiError(400, "'team' goes with \"shared\": true.", "team")
    return prompt_share_team(user=user, slug=team) if shared else None


def _unknown_fields(body: dict[str, Any]) -> None:
    unknown = sorted(set(body) - set(FIELDS))
    if unknown:
        raise ApiError(400, f"Unknown field '{unknown[0]}': a prompt has {', '.join(FIELDS)}.", unknown[0])


def _create(user: Any, body: dict[str, Any]) -> dict[str, Any]:
    _unknown_fields(body)
    team = _team(user, {"shared": False, **body})
    prompt = prompt_create(user=user, title=body.get("title"), text=body.get("text"), team=team)
    return prompt_json(prompt, editable=True)


def _patch(user: Any, prompt_id: str, body: dict[str, Any]) -> dict[str, Any]:
    _unknown_fields(body)
    prompt = _found(user, prompt_id)
    changes = {k: body[k] for k in ("title", "text") if k in body}
    prompt = prompt_update(user=user, prompt=prompt, team=_team(user, body), **changes)
    return prompt_json(prompt, editable=prompt_can_edit(user=user, prompt=prompt))


def _delete(user: Any, prompt_id: str) -> None:
    prompt_delete(user=user, prompt=_found(user, prompt_id))


def _one(user: Any, prompt_id: str) -> dict[str, Any]:
    prompt = _found(user, prompt_id)
    return prompt_json(prompt, editable=prompt_can_edit(user=user, prompt=prompt))


def prompt_fill(user: Any, prompt_id: str, values: Any) -> dict[str, Any]:
    """`{"id", "title", "text", "useCount"}`: the prompt filled with `values`, counted as one use."""
    prompt = _found(user, prompt_id)
    text = prompt_use(prompt=prompt, values=values)
    return {"id": prompt.pk, "title": prompt.title, "text": text, "useCount": prompt.use_count}


async def _call(function: Any, *args: Any) -> Any:
    try:
        return await sync_to_async(function)(*args)
    except ValidationError as exc:
        raise ApiError.refused(exc, statuses=STATUSES) from None


@csrf_exempt
async def prompts_api(request: HttpRequest) -> JsonResponse:
    try:
        user = await authenticate(request)
        if request.method == "GET":
            return JsonResponse({"prompts": await sync_to_async(prompts_json)(user)})
        if request.method != "POST":
            raise ApiError(405, "Use GET or POST.")
        return JsonResponse(await _call(_create, user, json_body(request.body)), status=201)
    except ApiError as exc:
        return exc.response()


@csrf_exempt
async def prompt_api(request: HttpRequest, prompt_id: str) -> HttpResponse:
    try:
        user = await authenticate(request)
        if request.method == "GET":
            return JsonResponse(await _call(_one, user, prompt_id))
        if request.method == "PATCH":
            return JsonResponse(await _call(_patch, user, prompt_id, json_body(request.body)))
        if request.method == "DELETE":
            await _call(_delete, user, prompt_id)
            return HttpResponse(status=204)
        raise ApiError(405, "Use GET, PATCH or DELETE.")
    except ApiError as exc:
        return exc.response()


@csrf_exempt
async def prompt_use_api(request: HttpRequest, prompt_id: str) -> JsonResponse:
    try:
        user = await authenticate(request)
        if request.method != "POST":
            raise ApiError(405, "Use POST.")
        body = json_body(request.body)
        return JsonResponse(await _call(prompt_fill, user, prompt_id, body.get("variables")))
    except ApiError as exc:
        return exc.response()
