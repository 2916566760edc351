"""Projects on the API (bearer token; projects/): `GET /api/v1/projects` (the user's projects),
`POST /api/v1/projects` `{"name", "description", "instructions", "defaultMode", "members", "team"?}`
→ 201, `GET|PATCH|DELETE /api/v1/projects/<id>`. `members`: null (or left out) for the whole team, or a
list of usernames of the team; `team`: a team's slug, the user's first team when left out. A project
the user is not a member of is a 404 like one that does not exist; a change only its creator or a
team owner may make (members, delete) is a 403 saying so; a bad field a 400 naming it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from asgiref.sync import sync_to_async
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.csrf import csrf_exempt

from aptix.teams import team_list_for_user
from projects.services import (
    UNCHANGED,
    ProjectNotFoundError,
    project_create,
    project_delete,
    project_get,
    project_list,
    project_members,
    project_update,
)

from .api_support import ApiError, authenticate, json_body

if TYPE_CHECKING:
    from projects.models import Project

NOT_FOUND = "No project with this id."
ERROR_TEAM = "'team' must be the slug of one of your teams."
ERROR_NO_TEAM = "You are not a member of any team; ask an administrator to add you."
# The API's names of the fields (camelCase) and the services' (snake_case).
FIELDS = {
    "name": "name",
    "description": "description",
    "instructions": "instructions",
    "defaultMode": "default_mode",
    "members": "members",
}
API_NAME = {service: api for api, service in FIELDS.items()}


def _iso(value: Any) -> str | None:
    return value.isoformat() if value else None


def project_json(project: Project) -> dict[str, Any]:
    return {
        "id": project.id,
        "name": project.name,
        "description": project.description,
        "instructions": project.instructions,
        "defaultMode": project.default_mode or None,
        "members": [user.get_username() for user in project_members(project=project)],
        "wholeTeam": project.whole_team,
        "team": project.team.slug,
        "createdBy": project.created_by.get_username() if project.created_by else None,
        "createdAt": _iso(project.created_at),
        "updatedAt": _iso(project.updated_at),
    }


def _found(user: Any, project_id: str) -> Project:
    try:
        return project_get(user=user, project_id=project_id)
    except ProjectNotFoundError:
        raise ApiError(404, NOT_FOUND, "id") from None


def _fields(body: dict[str, Any], *, allowed: tuple[str, ...]) -> dict[str, Any]:
    unknown = sorted(set(body) - set(allowed))
    if unknown:
        raise ApiError(400, f"Unknown field '{unknown[0]}': a project has {', '.join(allowed)}.", unknown[0])
    return {FIELDS[name]: value for name, value in body.items() if name in FIELDS}


def _team(user: Any, slug: Any) -> Any:
    teams = list(team_list_for_user(user=user))
    if slug is None:
        if not teams:
            raise ApiError(403, ERROR_NO_TEAM)
        return teams[0]
    team = next((t for t in teams if t.slug == slug), None)
    if team is None:
        raise ApiError(400, ERROR_TEAM, "team")
    return team


def _create(user: Any, body: dict[str, Any]) -> dict[str, Any]:
    fields = _fields(body, allowed=(*FIELDS, "team"))
    if "name" not in fields:
        raise ApiError(400, "'name' is required.", "name")
    project = project_create(team=_team(user, body.get("team")), user=user, **fields)
    return project_json(project)


def _patch(user: Any, project_id: str, body: dict[str, Any]) -> dict[str, Any]:
    project = _found(user, project_id)
    fields = _fields(body, allowed=tuple(FIELDS))
    changes = {name: fields.get(name, UNCHANGED) for name in FIELDS.values()}
    return project_json(project_update(project=project, user=user, **changes))


def _delete(user: Any, project_id: str) -> None:
    project_delete(project=_found(user, project_id), user=user)


def _list(user: Any) -> dict[str, Any]:
    return {"projects": [project_json(project) for project in project_list(user=user)]}


async def _call(function: Any, *args: Any) -> Any:
    try:
        return await sync_to_async(function)(*args)
    except ValidationError as exc:
        raise ApiError.refused(exc, fields=API_NAME) from None
    except PermissionDenied as exc:
        raise ApiError(403, str(exc)) from None


@csrf_exempt
async def projects_api(request: HttpRequest) -> JsonResponse:
    try:
        user = await authenticate(request)
        if request.method == "GET":
            return JsonResponse(await _call(_list, user))
        if request.method != "POST":
            raise ApiError(405, "Use GET or POST.")
        return JsonResponse(await _call(_create, user, json_body(request.body)), status=201)
    except ApiError as exc:
        return exc.response()


@csrf_exempt
async def project_api(request: HttpRequest, project_id: str) -> HttpResponse:
    try:
        user = await authenticate(request)
        if request.method == "GET":
            return JsonResponse(await _call(lambda: project_json(_found(user, project_id))))
        if request.method == "PATCH":
            return JsonResponse(await _call(_patch, user, project_id, json_body(request.body)))
        if request.method == "DELETE":
            await _call(_delete, user, project_id)
            return HttpResponse(status=204)
        raise ApiError(405, "Use GET, PATCH or DELETE.")
    except ApiError as exc:
        return exc.response()
