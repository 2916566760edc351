"""The document panel's requests: a document at a version, a diff between two versions, the editor
and its save (a new version marked as the user's), and the downloads (Markdown, DOCX). Only the
session's owner reaches any of it: the session comes from `session_get`, the document must be one of
that session's, and anything else is the same 404."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseBadRequest
from django.shortcuts import render
from django.utils.text import slugify
from django.views.decorators.http import require_GET, require_http_methods

from agents.documents.render import docx_bytes
from agents.documents.services import (
    DocumentError,
    DocumentNotFoundError,
    document_version,
    document_write,
)

from ..document_panel import PANEL_TEMPLATE, panel_context
from .sessions import get_session_or_404

EDITOR_TEMPLATE = "agents/_document_editor.html"
ERROR_VERSION = "'version' must be a whole number from 1."
ERROR_CONFLICT = (
    "The document changed while you edited it (it is at version {current} now, you started from {base}). "
    "Your text is kept below: compare it with the current version, then save again."
)
DOCX = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"


def _number(value: str | None) -> int | None:
    if not value:
        return None
    if not value.isdigit() or int(value) < 1:
        raise ValueError(ERROR_VERSION)
    return int(value)


@require_GET
@login_required
def document_panel(request: HttpRequest, session_id: str) -> HttpResponse:
    """The panel: `?doc=<id>` (else the most recently changed), `?version=N` (else the current one),
    `?from=A&to=B`: the diff between two versions."""
    session = get_session_or_404(request, session_id, read=True)
    try:
        version = _number(request.GET.get("version"))
        before, after = _number(request.GET.get("from")), _number(request.GET.get("to"))
    except ValueError as exc:
        return HttpResponseBadRequest(str(exc))
    compare = (before, after) if before and after else None
    try:
        context = panel_context(session, document_id=request.GET.get("doc") or None, version=version, compare=compare)
    except DocumentNotFoundError:
        raise Http404("No such document.") from None
    return render(request, PANEL_TEMPLATE, context)


@require_http_methods(["GET", "POST"])
@login_required
def document_edit(request: HttpRequest, session_id: str, document_id: str) -> HttpResponse:
    """GET: the editor on the current version. POST: the text as a new version by the user, unless the
    document moved on since the editor opened (then the editor again, the text kept, saying so)."""
    session = get_session_or_404(request, session_id)
    try:
        current = document_version(session_id=session.id, document_id=document_id)
    except DocumentNotFoundError:
        raise Http404("No such document.") from None
    if request.method == "GET":
        return render(request, EDITOR_TEMPLATE, {"session": session, "shown": current, "content": current.content})
    content = request.POST.get("content", "").replace("\r\n", "\n")
    title = request.POST.get("title", "") or current.title
    error = ""
    try:
        base = _number(request.POST.get("base")) or 0
    except ValueError as exc:
        error = str(exc)
    else:
        if base != current.number:
            error = ERROR_CONFLICT.format(current=current.number, base=base)
    if not error:
        try:
            saved = document_write(
                session_id=session.id,
                title=title,
                content=content,
                document_id=document_id,
                author="user",
                user=request.user,
            )
        except DocumentError as exc:
            error = str(exc)
        else:
            return render(request, PANEL_TEMPLATE, panel_context(session, document_id=saved.document_id))
    context = {"session": session, "shown": current, "content": content, "title": title, "error": error}
    response = render(request, EDITOR_TEMPLATE, context, status=422)
    response["HX-Retarget"], response["HX-Reswap"] = "#doc-body", "innerHTML"  # the editor again, in place
    return response


@require_GET
@login_required
def document_download(request: HttpRequest, session_id: str, document_id: str, fmt: str) -> HttpResponse:
    """The document (`?version=N`, else the current one) as Markdown or as a Word file."""
    session = get_session_or_404(request, session_id, read=True)
    if fmt not in ("md", "docx"):
        raise Http404("No such format.")
    try:
        version = _number(request.GET.get("version"))
    except ValueError as exc:
        return HttpResponseBadRequest(str(exc))
    try:
        row = document_version(session_id=session.id, document_id=document_id, version=version)
    except DocumentNotFoundError:
        raise Http404("No such document.") from None
    return download_response(row.title, row.number, row.content, fmt)


def download_response(title: str, number: int, content: str, fmt: str) -> HttpResponse:
    """A version as an attachment named after its title and number (the page and the API alike)."""
    name = f"{slugify(title) or 'document'}-v{number}.{fmt}"
    if fmt == "docx":
        response = HttpResponse(docx_bytes(title, content), content_type=DOCX)
    else:
        response = HttpResponse(content, content_type="text/markdown; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{name}"'
    response["X-Content-Type-Options"] = "nosniff"
    return response
