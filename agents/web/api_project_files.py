"""A project's files on the API (projects/files.py): `POST /api/v1/projects/<id>/files` (multipart,
field `file`) → 201 with the same description as `POST /api/v1/files` (tables included: their names
are the ones files_query takes in the project's sessions), `GET /api/v1/projects/<id>/files` (its live
files, oldest first) and `DELETE /api/v1/projects/<id>/files/<fileId>` → 204 (for every session of the
project). Bearer token first; a project the user is not a member of is a 404 like one that does not
exist; 400, 413, 415 and 422 name the problem as the files API does."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.csrf import csrf_exempt

from files.models import SessionFile
from files.services import file_describe
from projects.files import project_file_delete, project_file_list, project_file_upload
from projects.models import Project
from projects.services import ProjectNotFoundError, project_get

from .api_files import ERROR_NO_FILE, bearer_or_401, upload_received, upload_stored
from .api_projects import NOT_FOUND
from .api_support import ApiError


def _project(user: Any, project_id: str) -> Project:
    try:
        return project_get(user=user, project_id=project_id)
    except ProjectNotFoundError:
        raise ApiError(404, NOT_FOUND, "projectId") from None


def project_file_json(upload: SessionFile) -> dict[str, Any]:
    """`POST /api/v1/files`'s description, with who uploaded it and when."""
    return {
        **file_describe(upload),
        "uploadedBy": upload.owner.get_username(),
        "createdAt": upload.created_at.isoformat(),
    }


@csrf_exempt
def project_files_api(request: HttpRequest, project_id: str) -> JsonResponse:
    """GET: the project's files; POST: store the uploaded file as the project's (201 with its description)."""
    try:
        user = bearer_or_401(request)
        if request.method not in ("GET", "POST"):
            raise ApiError(405, "Use GET or POST.")
        project = _project(user, project_id)
        if request.method == "GET":
            return JsonResponse(
                {"files": [project_file_json(f) for f in project_file_list(user=user, project=project)]}
            )
        uploaded = upload_received(request)
        stored = upload_stored(uploaded, lambda file: project_file_upload(user=user, project=project, uploaded=file))
    except ApiError as exc:
        return exc.response()
    return JsonResponse(file_describe(stored), status=201)


@csrf_exempt
def project_file_api(request: HttpRequest, project_id: str, file_id: str) -> HttpResponse:
    """DELETE: the project's file, for every session of the project (its content goes; the audit keeps it)."""
    try:
        user = bearer_or_401(request)
        if request.method != "DELETE":
            raise ApiError(405, "Use DELETE.")
        project = _project(user, project_id)
        try:
            project_file_delete(user=user, project=project, file_id=file_id)
        except SessionFile.DoesNotExist:
            raise ApiError(404, ERROR_NO_FILE, "fileId") from None
    except ApiError as exc:
        return exc.response()
    return HttpResponse(status=204)
