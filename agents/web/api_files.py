"""JSON API for files: upload (`POST /api/v1/files`, multipart field `file`, optional `conversationId`),
a file's description (`GET /api/v1/files/<fileId>`), its content (`GET …/content`, a download) and its
deletion (`DELETE /api/v1/files/<fileId>`). Bearer token first (within the API's rate limits), then
the request; errors are the API's (agents/web/api_support.py). A file is its uploader's: anyone else's
id is a 404, as an unknown one. An upload without `conversationId` belongs to no session until a
message first carries it (`files` of /api/v1/agent/execute)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.core.files.uploadedfile import UploadedFile
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.http.response import HttpResponseBase
from django.views.decorators.csrf import csrf_exempt

from aptix.bearer import NotForHere, RateLimited, bearer_user
from files.models import SessionFile
from files.services import FileRefused, file_delete, file_describe, file_get, file_in_session_get, file_upload
from files.uploads import upload_refusal

from .api_support import ApiError, conversation_get
from .views.files import file_response

ERROR_NO_FILE = "No file with this id."
ERROR_FILE_FIELD = "Send the file as the multipart/form-data field 'file'."


def bearer_or_401(request: HttpRequest) -> Any:
    """The token's user, before anything else (429 past the API's rates, 401 without a valid token)."""
    try:
        user = bearer_user(request)
    except RateLimited as exc:
        raise ApiError.too_many(exc.limited) from None
    except NotForHere as exc:
        raise ApiError(403, str(exc)) from None
    if user is None:
        raise ApiError(401, "Missing or invalid bearer token. Send 'Authorization: Bearer <token>'.")
    return user


def upload_received(request: HttpRequest) -> UploadedFile | None:
    """The multipart field `file` (None when missing), after the upload handler's own refusal: it
    stops an upload at the size limit before the view runs (413, naming the limit)."""
    if refusal := upload_refusal(request):
        raise ApiError(refusal.status, refusal.message, "file")
    return request.FILES.get("file")


def upload_stored(uploaded: UploadedFile | None, store: Callable[[UploadedFile], SessionFile]) -> SessionFile:
    """`uploaded` stored by `store` (a session's or a project's upload): 400 when the field was missing,
    and the pipeline's refusals (413 quota, 415 kind, 422 malformed) as the API's errors on `file`."""
    if uploaded is None:
        raise ApiError(400, ERROR_FILE_FIELD, "file")
    try:
        return store(uploaded)
    except FileRefused as exc:
        raise ApiError(exc.status, exc.message, "file") from None


def _readable(user: Any, file_id: str, *, delete: bool = False) -> SessionFile:
    """The user's own file; or one of a session a teammate shared with their team, to read (to delete
    it, a 403 saying why). Any other id is a 404."""
    try:
        return file_get(user, file_id)
    except SessionFile.DoesNotExist:
        pass
    try:
        stored = file_in_session_get(file_id)
    except SessionFile.DoesNotExist:
        raise ApiError(404, ERROR_NO_FILE, "fileId") from None
    try:
        conversation_get(user=user, conversation_id=str(stored.session_id), read=not delete)
    except ApiError as exc:
        raise ApiError(exc.status, exc.message if exc.status == 403 else ERROR_NO_FILE, "fileId") from None
    return stored


@csrf_exempt
def files_api(request: HttpRequest) -> JsonResponse:
    """POST: store the uploaded file; 201 with its description. 413 over APTIX_UPLOAD_MAX_BYTES or the
    user's quota, 415 for a kind that is not accepted (both say what was found and what is allowed)."""
    try:
        user = bearer_or_401(request)
        if request.method != "POST":
            raise ApiError(405, "Use POST.")
        uploaded = upload_received(request)
        conversation_id = request.POST.get("conversationId") or None
        session = conversation_get(user=user, conversation_id=conversation_id) if conversation_id else None
        stored = upload_stored(uploaded, lambda file: file_upload(owner=user, uploaded=file, session=session))
    except ApiError as exc:
        return exc.response()
    return JsonResponse(file_describe(stored), status=201)


@csrf_exempt
def file_api(request: HttpRequest, file_id: str) -> HttpResponse:
    """GET: the file's description; DELETE: the file (its content and tables; the audit keeps the record)."""
    try:
        user = bearer_or_401(request)
        if request.method not in ("GET", "DELETE"):
            raise ApiError(405, "Use GET or DELETE.")
        stored = _readable(user, file_id, delete=request.method == "DELETE")
        if request.method == "DELETE":
            file_delete(user, file_id)
            return HttpResponse(status=204)
    except ApiError as exc:
        return exc.response()
    return JsonResponse(file_describe(stored))


@csrf_exempt
def file_content_api(request: HttpRequest, file_id: str) -> HttpResponseBase:
    """GET: the file as uploaded, as a download (Content-Disposition: attachment; nosniff)."""
    try:
        user = bearer_or_401(request)
        if request.method != "GET":
            raise ApiError(405, "Use GET.")
        stored = _readable(user, file_id)
    except ApiError as exc:
        return exc.response()
    return file_response(stored)
