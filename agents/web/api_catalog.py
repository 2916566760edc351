"""JSON API for curators' pipelines: a mode's versions, drafts, review and diff (modes/versions.py).

`GET /api/v1/catalog/modes/<key>/versions`, `POST …/drafts` (the front matter's fields plus `prompt`
and an optional `note`; unsent fields keep the published values) → 201 `{"version", "state": "draft"}`,
`POST …/versions/<n>/publish` (a superseded version: restored as a new one), `…/approve`, `…/reject`
`{"comment"}`, `GET …/diff?from=a&to=b` (default: the published version to the newest).

Bearer token first; a user without the catalog permissions (to change or to publish agent modes; a
superuser has all) gets 403 before anything about the mode is read. A bad field is a 400 naming it;
publishing without the permission 403, under review without someone else's approval 409.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from asgiref.sync import sync_to_async
from django.core.exceptions import ValidationError
from django.http import HttpRequest, JsonResponse
from django.views.decorators.csrf import csrf_exempt

from modes.versioning import FIELD_NAMES, FRONT_MATTER_NAMES, snapshot_diff
from modes.versions import (
    CODE_FORBIDDEN,
    CODE_NEEDS_REVIEW,
    CODE_NOT_FOUND,
    CODE_STATE,
    PERM_CURATE,
    PERM_PUBLISH,
    draft_save,
    mode_get,
    published_version,
    version_approve,
    version_get,
    version_publish,
    version_reject,
    versions_of,
)

from .api_support import ApiError, authenticate, json_body

if TYPE_CHECKING:
    from modes.models import ModeVersion

STATUS_OF_CATALOG_CODE = {CODE_FORBIDDEN: 403, CODE_NEEDS_REVIEW: 409, CODE_STATE: 409, CODE_NOT_FOUND: 404}
ERROR_NOT_CURATOR = "The catalog API needs the permission to change or to publish agent modes."
TEXT_FIELDS = ("name", "description", "summary", "prompt", "model", "execution")
FLAG_FIELDS = ("default", "active")
LIST_FIELDS = ("tools", "approvals", "roles", "examples", "tests", "teams")


def _curator(user: Any) -> None:
    if not (user.has_perm(PERM_CURATE) or user.has_perm(PERM_PUBLISH)):
        raise ApiError(403, ERROR_NOT_CURATOR)


def _refused(exc: ValidationError) -> ApiError:
    return ApiError.refused(exc, statuses=STATUS_OF_CATALOG_CODE, fields=FIELD_NAMES)


def version_json(version: ModeVersion) -> dict[str, Any]:
    return {
        "version": version.number,
        "state": version.state,
        "author": version.author.username if version.author else None,
        "createdAt": version.created_at.isoformat(),
        "note": version.note,
        "restoredFrom": version.restored_from,
        "reviewer": version.reviewer.username if version.reviewer else None,
        "reviewComment": version.review_comment,
        "reviewedAt": version.reviewed_at.isoformat() if version.reviewed_at else None,
        "publishedAt": version.published_at.isoformat() if version.published_at else None,
    }


def parse_draft_fields(body: dict[str, Any]) -> tuple[dict[str, Any], str]:
    """The body's front matter names as AgentMode fields, and the note; ApiError naming a bad field."""
    fields: dict[str, Any] = {}
    for name, value in body.items():
        if name == "note":
            if not isinstance(value, str):
                raise ApiError(400, "'note' must be a string.", "note")
            continue
        if name not in FRONT_MATTER_NAMES or name == "key":
            raise ApiError(400, f"Unknown field '{name}'.", name)
        ok = (
            (name in TEXT_FIELDS and isinstance(value, str))
            or (name in FLAG_FIELDS and isinstance(value, bool))
            or (name == "order" and isinstance(value, int) and not isinstance(value, bool) and value >= 0)
            or (name in LIST_FIELDS and isinstance(value, list) and all(isinstance(v, str) for v in value))
            or (name == "ask_followup" and (value is None or isinstance(value, bool)))
            or (name == "checks" and isinstance(value, list))  # each check: the field's validator
            or (name == "knowledge" and isinstance(value, (str, list)))  # "project", "none" or names: the validator
        )
        if not ok:
            raise ApiError(400, f"'{name}' has the wrong type.", name)
        fields[FRONT_MATTER_NAMES[name]] = value
    return fields, str(body.get("note") or "")


def _mode(key: str):
    try:
        return mode_get(key)
    except ValidationError as exc:
        raise _refused(exc) from None


def _version(key: str, number: int) -> ModeVersion:
    try:
        return version_get(_mode(key), number)
    except ValidationError as exc:
        raise _refused(exc) from None


def _versions(user: Any, key: str) -> dict[str, Any]:
    _curator(user)
    mode = _mode(key)
    return {"mode": mode.key, "published": mode.version, "versions": [version_json(v) for v in versions_of(mode)]}


def _draft(user: Any, key: str, raw: bytes) -> dict[str, Any]:
    _curator(user)
    mode = _mode(key)
    fields, note = parse_draft_fields(json_body(raw))
    try:
        version = draft_save(mode=mode, fields=fields, author=user, note=note)
    except ValidationError as exc:
        raise _refused(exc) from None
    return {"version": version.number, "state": version.state}


def _act(user: Any, key: str, number: int, action: str, raw: bytes) -> dict[str, Any]:
    _curator(user)
    version = _version(key, number)
    body = json_body(raw) if raw.strip() else {}
    comment = body.get("comment") or ""
    if not isinstance(comment, str):
        raise ApiError(400, "'comment' must be a string.", "comment")
    try:
        if action == "publish":
            done = version_publish(version=version, by=user, note=str(body.get("note") or ""))
        elif action == "approve":
            done = version_approve(version=version, by=user, comment=comment)
        else:
            done = version_reject(version=version, by=user, comment=comment)
    except ValidationError as exc:
        raise _refused(exc) from None
    return version_json(done)


def _number(value: str | None, name: str) -> int | None:
    if not value:
        return None
    if not value.isdigit():
        raise ApiError(400, f"'{name}' must be a version number.", name)
    return int(value)


def _diff(user: Any, key: str, params: Any) -> dict[str, Any]:
    _curator(user)
    mode = _mode(key)
    start, end = _number(params.get("from"), "from"), _number(params.get("to"), "to")
    published = published_version(mode)
    newest = versions_of(mode)[0]
    old = _version(key, start) if start is not None else (published or newest)
    new = _version(key, end) if end is not None else newest
    return {
        "mode": mode.key,
        "from": old.number,
        "to": new.number,
        "changes": snapshot_diff(old.snapshot, new.snapshot),
    }


@csrf_exempt
async def catalog_versions_api(request: HttpRequest, key: str) -> JsonResponse:
    try:
        user = await authenticate(request)  # auth before anything else
        if request.method != "GET":
            raise ApiError(405, "Use GET.")
        return JsonResponse(await sync_to_async(_versions)(user, key))
    except ApiError as exc:
        return exc.response()


@csrf_exempt
async def catalog_drafts_api(request: HttpRequest, key: str) -> JsonResponse:
    try:
        user = await authenticate(request)
        if request.method != "POST":
            raise ApiError(405, "Use POST.")
        return JsonResponse(await sync_to_async(_draft)(user, key, request.body), status=201)
    except ApiError as exc:
        return exc.response()


@csrf_exempt
async def catalog_version_action_api(request: HttpRequest, key: str, number: int, action: str) -> JsonResponse:
    try:
        user = await authenticate(request)
        if action not in ("publish", "approve", "reject"):
            raise ApiError(404, f"No action '{action}': use publish, approve or reject.")
        if request.method != "POST":
            raise ApiError(405, "Use POST.")
        return JsonResponse(await sync_to_async(_act)(user, key, number, action, request.body))
    except ApiError as exc:
        return exc.response()


@csrf_exempt
async def catalog_diff_api(request: HttpRequest, key: str) -> JsonResponse:
    try:
        user = await authenticate(request)
        if request.method != "GET":
            raise ApiError(405, "Use GET.")
        return JsonResponse(await sync_to_async(_diff)(user, key, request.GET))
    except ApiError as exc:
        return exc.response()
