"""The conversations on the API (bearer token): `GET /api/v1/conversations` (the user's own, or with
`?shared=true` those teammates shared with the user's teams), `GET /api/v1/conversations/<id>` (its
transcript, the session export's JSON: for its author and, while it is shared, the team's members)
and `POST /api/v1/conversations/<id>/share` `{"shared": true|false}` (its author only; a reader gets a
403, anyone else a 404)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from asgiref.sync import sync_to_async
from django.http import HttpRequest, JsonResponse
from django.views.decorators.csrf import csrf_exempt

from agents.selectors import session_list_own, session_shared_with
from agents.sharing.services import session_share

from .api_support import ApiError, authenticate, conversation_get, json_body
from .views.export import session_export_data

if TYPE_CHECKING:
    from agents.models import AgentSession

LIST_MAX = 200  # the most recently active conversations a list answers with


def _iso(value: Any) -> str | None:
    return value.isoformat() if value else None


def conversation_json(session: AgentSession) -> dict[str, Any]:
    return {
        "conversationId": session.id,
        "title": str(session),
        "team": session.team.name,
        "author": session.user.get_username(),
        "mode": session.mode,
        "execution": session.execution,
        "projectId": session.project_id,  # the project the conversation belongs to (None: no project)
        "shared": session.shared_at is not None,
        "sharedAt": _iso(session.shared_at),
        "readOnly": session.read_only,
        "updatedAt": _iso(session.updated_at),
    }


def _shared_flag(value: str | None) -> bool:
    if value in (None, "", "false"):
        return False
    if value == "true":
        return True
    raise ApiError(400, "'shared' must be true or false.", "shared")


def _list(user: Any, shared: bool) -> dict[str, Any]:
    if shared:
        sessions = session_shared_with(user=user, limit=LIST_MAX)
        for session in sessions:
            session.read_only = True
    else:
        sessions = session_list_own(user=user, limit=LIST_MAX)
    return {"conversations": [conversation_json(s) for s in sessions]}


@csrf_exempt
async def conversations_api(request: HttpRequest) -> JsonResponse:
    try:
        user = await authenticate(request)
        if request.method != "GET":
            raise ApiError(405, "Use GET.")
        shared = _shared_flag(request.GET.get("shared"))
        return JsonResponse(await sync_to_async(_list)(user, shared))
    except ApiError as exc:
        return exc.response()


def _transcript(user: Any, conversation_id: str, absolute: Any) -> dict[str, Any]:
    session = conversation_get(user=user, conversation_id=conversation_id, read=True)
    return {**conversation_json(session), "transcript": session_export_data(session, absolute)}


@csrf_exempt
async def conversation_api(request: HttpRequest, conversation_id: str) -> JsonResponse:
    try:
        user = await authenticate(request)
        if request.method != "GET":
            raise ApiError(405, "Use GET.")
        body = await sync_to_async(_transcript)(user, conversation_id, request.build_absolute_uri)
    except ApiError as exc:
        return exc.response()
    return JsonResponse(body)


def _share(user: Any, conversation_id: str, raw: bytes) -> dict[str, Any]:
    session = conversation_get(user=user, conversation_id=conversation_id)  # 404 or 403 before the body's checks
    body = json_body(raw)
    unknown = sorted(set(body) - {"shared"})
    if unknown:
        raise ApiError(400, f"Unknown field '{unknown[0]}'. Known fields: shared.", unknown[0])
    shared = body.get("shared")
    if not isinstance(shared, bool):
        raise ApiError(400, "'shared' must be true or false.", "shared")
    session = session_share(session=session, user=user, shared=shared)
    return {"conversationId": session.id, "shared": session.shared_at is not None}


@csrf_exempt
async def conversation_share_api(request: HttpRequest, conversation_id: str) -> JsonResponse:
    try:
        user = await authenticate(request)
        if request.method != "POST":
            raise ApiError(405, "Use POST.")
        body = await sync_to_async(_share)(user, conversation_id, request.body)
    except ApiError as exc:
        return exc.response()
    return JsonResponse(body)
