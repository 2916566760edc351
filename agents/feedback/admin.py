"""The feedback page of the admin (/admin/agents/answerfeedback/): per mode and per mode version, the
number of ratings and the share of 👎, and the latest reasons and comments, each linking to its turn's
trace (the Turn admin's page). For curators (the view permission on answer feedback; they may then
open the traces of rated turns, and no other turn) and auditors; auditors (the export permission)
download every rating as CSV. Ratings are written by their users only (agents/feedback/services.py):
nobody adds, edits or deletes them here."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse

from agents.models import AnswerFeedback
from aptix.audit_admin import AuditTrailAdminMixin
from modes.admin import csv_download

from .selectors import (
    feedback_by_mode,
    feedback_by_mode_version,
    feedback_export,
    feedback_latest_comments,
    feedback_modes,
)

CSV_COLUMNS = [
    "updated_at",
    "created_at",
    "turn_id",
    "session_id",
    "team",
    "user",
    "rating",
    "reason",
    "comment",
    "mode",
    "mode_version",
    "model",
    "tools",
]
EXPORT_PERMISSION = "agents.export_answerfeedback"


class FeedbackFilterForm(forms.Form):
    mode = forms.ChoiceField(required=False)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["mode"].choices = [("", "All modes"), *((m, m) for m in feedback_modes())]  # type: ignore[attr-defined]

    def selected_mode(self) -> str:
        return (self.cleaned_data.get("mode") or "") if self.is_valid() else ""


def export_rows(mode: str) -> Any:
    for f in feedback_export(mode=mode).iterator(chunk_size=500):
        session = f.turn.session
        yield [
            f.updated_at.isoformat(),
            f.created_at.isoformat(),
            f.turn_id,
            session.pk,
            session.team.name,
            f.user.get_username(),
            f.rating,
            f.reason,
            f.comment,
            f.mode,
            f.mode_version,
            f.model_label,
            " ".join(f.tools),
        ]


@admin.register(AnswerFeedback)
class AnswerFeedbackAdmin(AuditTrailAdminMixin, admin.ModelAdmin):
    def changelist_view(self, request: HttpRequest, extra_context: dict[str, Any] | None = None) -> HttpResponse:
        if not self.has_view_permission(request):
            raise PermissionDenied
        form = FeedbackFilterForm(request.GET or None)
        mode = form.selected_mode()
        can_export = request.user.has_perm(EXPORT_PERMISSION)
        if request.GET.get("format") == "csv":
            if not can_export:
                raise PermissionDenied
            return csv_download("answer-feedback", CSV_COLUMNS, export_rows(mode))
        query = request.GET.copy()
        query["format"] = "csv"
        context = {
            **self.admin_site.each_context(request),
            "title": "Feedback on answers",
            "opts": self.model._meta,
            "form": form,
            "by_mode": feedback_by_mode(mode=mode),
            "by_version": feedback_by_mode_version(mode=mode),
            "comments": feedback_latest_comments(mode=mode),
            "can_export": can_export,
            "csv_query": query.urlencode(),
            **(extra_context or {}),
        }
        return TemplateResponse(request, "admin/agents/feedback_report.html", context)

    def change_view(self, request: HttpRequest, object_id: str, form_url: str = "", extra_context: Any = None) -> Any:
        raise PermissionDenied  # one rating is read on the report and in its turn's trace
