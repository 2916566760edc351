"""A user's files on the page: the composer's upload (JSON, for static/js/files.js), a file's download
(its owner only; anyone else's file is a 404, as for a session), and the Files panel's delete. Uploads
stream to storage through the upload handler of settings.FILE_UPLOAD_HANDLERS (files/uploads.py),
which stops one over APTIX_UPLOAD_MAX_BYTES."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import FileResponse, Http404, HttpRequest, HttpResponse, JsonResponse
from django.http.response import HttpResponseBase
from django.shortcuts import render
from django.views.decorators.http import require_GET, require_POST

from agents.sessions import SessionNotFoundError, session_get
from files.knowledge import document_view, project_document_get
from files.models import SessionFile
from files.services import (
    FileRefused,
    file_delete,
    file_describe,
    file_get,
    file_in_session_get,
    file_open,
    file_thumbnail_open,
    file_upload,
)
from files.uploads import upload_refusal
from projects.services import ProjectNotFoundError, project_get

from ..fragments import files_panel
from .sessions import get_session_or_404

ERROR_NO_FILE_FIELD = "Send the file as the multipart field 'file'."


def _refused(status: int, message: str, field: str | None = "file") -> JsonResponse:
    """The API's error shape, which the chip shows (its message)."""
    return JsonResponse({"error": {"message": message, "field": field}}, status=status)


@require_POST
def file_upload_view(request: HttpRequest) -> JsonResponse:
    """The composer's upload: the file (multipart `file`) is stored at once, the uploader's until a
    message it goes with is sent; the answer is its description (201) or why it was refused (413 too
    big, 415 a kind not accepted, with the server's reason)."""
    if not request.user.is_authenticated:  # a JSON answer for the page's script, not a login redirect
        return _refused(401, "You are signed out. Sign in again, then attach the file.", None)
    uploaded = request.FILES.get("file")
    if refusal := upload_refusal(request):  # the upload handler stopped it at the size limit
        return _refused(refusal.status, refusal.message)
    if uploaded is None:
        return _refused(400, ERROR_NO_FILE_FIELD)
    try:
        stored = file_upload(owner=request.user, uploaded=uploaded)
    except FileRefused as exc:
        return _refused(exc.status, exc.message)
    return JsonResponse(file_describe(stored), status=201)


def owned_file_or_404(request: HttpRequest, file_id: str) -> SessionFile:
    """The signed-in user's own file; anyone else's (or none) is a 404 that says nothing."""
    try:
        return file_get(request.user, file_id)
    except SessionFile.DoesNotExist:
        raise Http404("No such file.") from None


def readable_file_or_404(request: HttpRequest, file_id: str) -> SessionFile:
    """The user's own file, or a file of a session a teammate shared with their team; else a 404."""
    try:
        return file_get(request.user, file_id)
    except SessionFile.DoesNotExist:
        pass
    try:
        stored = file_in_session_get(file_id)
        session_get(user=request.user, session_id=str(stored.session_id), read=True)
    except (SessionFile.DoesNotExist, SessionNotFoundError):
        raise Http404("No such file.") from None
    return stored


@require_GET
@login_required
def file_download(request: HttpRequest, file_id: str) -> HttpResponseBase:
    """The file as it was uploaded, to its owner or a reader of the shared session it is in: a download
    (an image also shows in the page's <img>). `?thumb=1`: an image's thumbnail (a message shows it),
    the file itself when it has none."""
    stored = readable_file_or_404(request, file_id)
    thumbnail = file_thumbnail_open(stored) if request.GET.get("thumb") == "1" else None
    if thumbnail is not None:
        response = FileResponse(thumbnail, content_type="image/png")
        response["X-Content-Type-Options"] = "nosniff"
        response["Cache-Control"] = "private, max-age=3600"
        return response
    return file_response(stored)


@require_GET
@login_required
def file_view(request: HttpRequest, file_id: str) -> HttpResponse:
    """A document's pages on the page, each passage marked: where a knowledge search citation opens it
    (`?page=N#passage-<id>`). To its owner, a reader of the shared session it is in, or a member of
    its project; a 404 for anyone else, a crafted id included."""
    stored = citable_file_or_404(request, file_id)
    if stored.kind != SessionFile.Kind.DOCUMENT:
        raise Http404("No such document.")
    page = request.GET.get("page", "")
    context = {"file": stored, "pages": document_view(stored), "current": int(page) if page.isdigit() else None}
    return render(request, "files/file_view.html", context)


def citable_file_or_404(request: HttpRequest, file_id: str) -> SessionFile:
    """A file the user may read (readable_file_or_404), or a document of a project they are a member of."""
    try:
        return readable_file_or_404(request, file_id)
    except Http404:
        pass
    try:
        stored = project_document_get(file_id)
        project_get(user=request.user, project_id=str(stored.project_id))
    except (SessionFile.DoesNotExist, ProjectNotFoundError):
        raise Http404("No such file.") from None
    return stored


def file_response(stored: SessionFile) -> HttpResponseBase:
    """A stored file as a download: never rendered inline as anything but an image (whose kind was
    decided by its content), never sniffed."""
    image = stored.kind == SessionFile.Kind.IMAGE
    response = FileResponse(
        file_open(stored),
        as_attachment=True,
        filename=stored.name,
        content_type=f"image/{stored.format}" if image else "application/octet-stream",
    )
    response["X-Content-Type-Options"] = "nosniff"
    response["Cache-Control"] = "private, max-age=3600"
    return response


@require_POST
@login_required
def file_delete_view(request: HttpRequest, file_id: str) -> HttpResponse:
    """Delete a file (the Files panel, or a chip removed before sending): its content and tables go,
    the audit keeps the record. Answers with the session's Files panel when it was in one."""
    stored = owned_file_or_404(request, file_id)
    session_id = stored.session_id
    file_delete(request.user, file_id)
    if session_id is None:
        return HttpResponse(status=204)
    session = get_session_or_404(request, session_id)
    return HttpResponse(files_panel(session, oob=True))
