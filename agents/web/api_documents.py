"""GET /api/v1/conversations/<id>/documents and …/documents/<documentId>: a conversation's documents
for API clients (bearer token). Without `format`, JSON: the document at a version (`?version=N`,
versions count from 1; else the current one) with its list of versions; `?format=md|docx` downloads it.
A conversation or document that is not the token user's is a 404, as on the page (one a teammate
shared with the user's team reads as the author's own)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from asgiref.sync import sync_to_async
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.csrf import csrf_exempt

from agents.documents.export import document_json
from agents.documents.services import DocumentNotFoundError, document_version, documents_of

from .api_support import ApiError, authenticate, conversation_get
from .views.documents import download_response

FORMATS = ("md", "docx")


def _iso(moment: datetime | None) -> str | None:
    return moment.isoformat() if moment else None


def _conversation_id(user: Any, conversation_id: str) -> str:
    return conversation_get(user=user, conversation_id=conversation_id, read=True).id


def _list(user: Any, conversation_id: str) -> dict[str, Any]:
    session_id = _conversation_id(user, conversation_id)
    documents = [
        {"documentId": d.id, "title": d.title, "version": d.version, "updatedAt": _iso(d.updated_at)}
        for d in documents_of(session_id=session_id)
    ]
    return {"conversationId": session_id, "documents": documents}


def _version_param(value: str | None) -> int | None:
    if value is None:
        return None
    if not value.isdigit() or int(value) < 1:
        raise ApiError(400, "'version' must be a whole number from 1.", "version")
    return int(value)


def _document(user: Any, conversation_id: str, document_id: str, version: int | None) -> Any:
    session_id = _conversation_id(user, conversation_id)
    try:
        return document_version(session_id=session_id, document_id=document_id, version=version)
    except DocumentNotFoundError as exc:
        raise ApiError(404, str(exc), "version" if version else "documentId") from None


@csrf_exempt
async def documents_api(request: HttpRequest, conversation_id: str) -> JsonResponse:
    try:
        user = await authenticate(request)
        if request.method != "GET":
            raise ApiError(405, "Use GET.")
        return JsonResponse(await sync_to_async(_list)(user, conversation_id))
    except ApiError as exc:
        return exc.response()


@csrf_exempt
async def document_api(request: HttpRequest, conversation_id: str, document_id: str) -> HttpResponse:
    try:
        user = await authenticate(request)
        if request.method != "GET":
            raise ApiError(405, "Use GET.")
        fmt = request.GET.get("format")
        if fmt is not None and fmt not in FORMATS:
            raise ApiError(400, "'format' must be md or docx (or left out for JSON).", "format")
        version = _version_param(request.GET.get("version"))
        row = await sync_to_async(_document)(user, conversation_id, document_id, version)
        if fmt is not None:
            return await sync_to_async(download_response)(row.title, row.number, row.content, fmt)
        return JsonResponse(await sync_to_async(document_json)(row))
    except ApiError as exc:
        return exc.response()
