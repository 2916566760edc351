"""The catalog admin's Export (a zip of the mode files) and Import (upload → preview → confirm) pages.

Both need the permission to change modes, checked here on the server (the buttons only follow it);
importing a new mode needs the permission to add one too. The preview writes nothing; its confirmation
carries the planned files back (base64, so no browser rewrites a newline in a prompt) with the plan's
digest, and is planned and validated again before anything is written: if the catalog changed in
between, the new preview shows instead.
"""

from __future__ import annotations

import base64
import binascii
from typing import Any

from django.conf import settings
from django.contrib import messages
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.template.response import TemplateResponse
from django.utils import timezone

from .format import SUFFIX, key_from_file_name
from .frontmatter import Problem
from .plan import NEW, ImportPlan, apply_plan, export_files, plan_import
from .sources import MODE, Source, read_uploads, zip_bytes

TEMPLATE = "admin/modes/agentmode/import.html"
ERROR_NO_FILES = "Choose a .zip or one or more .md files (each at most {limit} bytes)."
ERROR_CHANGED_SINCE_PREVIEW = "The catalog or the files changed since the preview: check this preview again."
ERROR_ADD_PERMISSION = "Importing a new mode needs the permission to add modes: nothing was imported."


def _require_change(model_admin: Any, request: HttpRequest) -> None:
    if not model_admin.has_change_permission(request):
        raise PermissionDenied


def export_view(model_admin: Any, request: HttpRequest) -> HttpResponse:
    _require_change(model_admin, request)
    response = HttpResponse(zip_bytes(export_files()), content_type="application/zip")
    stamp = timezone.now().strftime("%Y%m%d-%H%M%S")
    response["Content-Disposition"] = f'attachment; filename="aptix-modes-{stamp}.zip"'
    return response


def _uploaded(request: HttpRequest) -> list[tuple[str, Any]]:
    """(name, file) of each upload, read by sources.read_uploads within its caps (the upload handler has
    already stopped any past APTIX_UPLOAD_MAX_BYTES)."""
    return [(upload.name or "upload", upload) for upload in request.FILES.getlist("files")]


def _confirmed_sources(request: HttpRequest) -> tuple[list[Source], list[Problem]]:
    sources, problems = [], []
    for name, encoded in zip(request.POST.getlist("file_name"), request.POST.getlist("file_text"), strict=False):
        if not name.endswith(SUFFIX) or "/" in name or not key_from_file_name(name):
            problems.append(Problem(name, None, None, "not a mode file name"))
            continue
        try:
            sources.append(Source(name, base64.b64decode(encoded, validate=True).decode("utf-8"), MODE))
        except (binascii.Error, UnicodeDecodeError):
            problems.append(Problem(name, None, None, "the confirmation's copy of this file is damaged"))
    return sources, problems


def _page(model_admin: Any, request: HttpRequest, plan: ImportPlan | None = None, **extra: Any) -> HttpResponse:
    writes = plan.writes if plan is not None else []
    context = {
        **model_admin.admin_site.each_context(request),
        "title": "Import modes",
        "opts": model_admin.model._meta,
        "plan": plan,
        "upload_limit": request_limit(),
        "confirm_files": [
            (f"{mode.key}{SUFFIX}", base64.b64encode(mode.text.encode("utf-8")).decode("ascii")) for mode in writes
        ],
        **extra,
    }
    return TemplateResponse(request, TEMPLATE, context, status=400 if plan is not None and plan.problems else 200)


def request_limit() -> int:
    return settings.APTIX_UPLOAD_MAX_BYTES


def import_view(model_admin: Any, request: HttpRequest) -> HttpResponse:
    _require_change(model_admin, request)
    if request.method != "POST":
        return _page(model_admin, request)
    if "confirm" in request.POST:
        return _confirm(model_admin, request)
    uploads = _uploaded(request)
    if not uploads:
        return _page(model_admin, request, error=ERROR_NO_FILES.format(limit=request_limit()))
    sources, problems = read_uploads(uploads)
    if not sources and not problems:
        return _page(model_admin, request, error="No mode files in the upload (*.mode.md, *.agent.md or .md).")
    return _page(model_admin, request, plan_import(sources, problems))


def _confirm(model_admin: Any, request: HttpRequest) -> HttpResponse:
    sources, problems = _confirmed_sources(request)
    plan = plan_import(sources, problems)
    if plan.problems or plan.digest() != request.POST.get("digest"):
        return _page(model_admin, request, plan, error=ERROR_CHANGED_SINCE_PREVIEW)
    if plan.count(NEW) and not model_admin.has_add_permission(request):
        return _page(model_admin, request, plan, error=ERROR_ADD_PERMISSION)
    try:
        done = apply_plan(plan, publish=request.POST.get("publish") == "on", author=request.user)
    except ValidationError as exc:
        return _page(model_admin, request, plan, error=" ".join(exc.messages))
    imported = "; ".join(str(mode) for mode in done)
    model_admin.message_user(request, f"Imported {len(done)} mode(s): {imported}.", messages.SUCCESS)
    return redirect("admin:modes_agentmode_changelist")
