"""A project's files on its page (/projects/<id>/): the Files card's upload (multipart `file`) and
each file's Delete, through projects/files.py; a file's download for the project's members. With
htmx the card is answered alone (a refusal with its status, saying why: 400, 413, 415, 422); without
JavaScript the form posts and the page comes back (303) with a message. A project the user is not a
member of is a 404, whoever asks, as is a file of another project or a session's."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.http.response import HttpResponseBase
from django.template.loader import render_to_string
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from files.models import SessionFile
from files.services import FileRefused
from files.uploads import upload_refusal
from projects.files import project_file_delete, project_file_get, project_file_list, project_file_upload
from projects.models import Project

from .files import ERROR_NO_FILE_FIELD, file_response
from .manage import see_other
from .projects import project_or_404

NO_FILE = "No such file in this project."


def files_card(request: HttpRequest, project: Project, *, error: str = "", done: str = "") -> str:
    """The project page's Files card (projects/_files.html), alone."""
    context = {"project": project, "files": project_file_list(user=request.user, project=project)}
    return render_to_string("projects/_files.html", {**context, "error": error, "done": done}, request=request)


def _answer(request: HttpRequest, project: Project, *, status: int, error: str = "", done: str = "") -> HttpResponse:
    if request.htmx:  # type: ignore[attr-defined]
        return HttpResponse(files_card(request, project, error=error, done=done), status=status)
    if error:
        messages.error(request, error)
    else:
        messages.success(request, done)
    return see_other(reverse("project-detail", args=[project.id]) + "#project-files")


@require_POST
@login_required
def project_file_upload_view(request: HttpRequest, project_id: str) -> HttpResponse:
    project = project_or_404(request, project_id)
    uploaded = request.FILES.get("file")
    refusal = upload_refusal(request)  # the upload handler stopped it at the size limit
    if refusal is None and uploaded is None:
        refusal = FileRefused(400, ERROR_NO_FILE_FIELD)
    if refusal is None:
        try:
            stored = project_file_upload(user=request.user, project=project, uploaded=uploaded)
        except FileRefused as exc:
            refusal = exc
    if refusal is not None:
        return _answer(request, project, status=refusal.status, error=refusal.message)
    return _answer(request, project, status=201, done=f"“{stored.name}” was added to the project.")


def _file(request: HttpRequest, project: Project, file_id: str) -> Any:
    try:
        return project_file_get(user=request.user, project=project, file_id=file_id)
    except SessionFile.DoesNotExist:
        raise Http404(NO_FILE) from None


@require_POST
@login_required
def project_file_delete_view(request: HttpRequest, project_id: str, file_id: str) -> HttpResponse:
    project = project_or_404(request, project_id)
    stored = _file(request, project, file_id)
    project_file_delete(user=request.user, project=project, file_id=stored.pk)
    return _answer(request, project, status=200, done=f"“{stored.name}” was deleted from the project and its sessions.")


@require_GET
@login_required
def project_file_download(request: HttpRequest, project_id: str, file_id: str) -> HttpResponseBase:
    """The file as uploaded, to a member of the project (a download, never rendered inline)."""
    project = project_or_404(request, project_id)
    return file_response(_file(request, project, file_id))
