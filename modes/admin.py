from __future__ import annotations

import csv
from collections.abc import Iterable
from typing import Any

from django.apps import apps
from django.contrib import admin, messages
from django.core.exceptions import ValidationError
from django.db.models import OuterRef, Subquery
from django.http import HttpResponse
from django.shortcuts import redirect
from django.urls import path
from django.utils import timezone
from django.utils.dateformat import format as date_format

from aptix.audit_admin import AuditTrailAdminMixin

from .admin_versions import VersionsAdminMixin
from .files.admin_views import export_view, import_view
from .forms import AgentModeForm, TeamDefaultModeForm
from .models import ERROR_DEFAULT_CANNOT_BE_DELETED, AgentMode, CatalogEvent, ModeHistory, TeamDefaultMode
from .services import mode_delete, mode_make_default, mode_set_active
from .teams import team_default_mode_set
from .versioning import VERSIONED_FIELDS
from .versions import mode_create, mode_save_versioned

DEFAULT_NOT_DELETABLE = ERROR_DEFAULT_CANNOT_BE_DELETED.rstrip(".") + (
    " (on its page, or with the list's action “Make the selected mode the default”)."
)


@admin.register(AgentMode)
class AgentModeAdmin(VersionsAdminMixin, admin.ModelAdmin):
    form = AgentModeForm
    change_form_template = "admin/modes/agentmode/change_form.html"  # with the mode's versions
    change_list_template = "admin/modes/agentmode/change_list.html"  # adds Export and Import
    list_display = ["display_name", "key", "is_default", "is_active", "teams_shown", "ordering", "updated_at"]
    list_filter = ["is_active", "is_default", "teams"]
    filter_horizontal = ["teams"]
    search_fields = ["key", "display_name", "description"]
    readonly_fields = ["id", "created_at", "updated_at"]
    actions = ["make_default", "activate", "deactivate"]
    fieldsets = [
        (
            None,
            {"fields": ["key", "display_name", "description", "is_default", "is_active", "ordering", "change_note"]},
        ),
        ("Teams", {"fields": ["teams"]}),
        ("Prompt", {"fields": ["system_prompt_summary", "system_prompt"]}),
        (
            "Routing",
            {
                "fields": [
                    "human_role_hints",
                    "example_utterances",
                    "tool_policy",
                    "approval_policy",
                    "knowledge_scope",
                    "model",
                    "execution",
                    "ask_followup",
                ]
            },
        ),
        ("Tests", {"fields": ["test_utterances", "checks"]}),
        ("Record", {"fields": ["id", "created_at", "updated_at"], "classes": ["collapse"]}),
    ]

    def get_urls(self):
        # Before the model admin's own: "<path:object_id>/" would take "export/" for an object id.
        wrap = self.admin_site.admin_view
        return [
            path("export/", wrap(lambda request: export_view(self, request)), name="modes_agentmode_export"),
            path("import/", wrap(lambda request: import_view(self, request)), name="modes_agentmode_import"),
            *super().get_urls(),
        ]

    def changelist_view(self, request, extra_context=None):
        # The Export and Import buttons follow the permission their pages check.
        extra_context = {**(extra_context or {}), "catalog_files": self.has_change_permission(request)}
        return super().changelist_view(request, extra_context)

    def save_model(self, request, obj, form, change):
        """A new version (modes/versions.py): published at once by someone who may publish with review
        off, else a draft that changes nothing live until it is published."""
        note = form.cleaned_data.get("change_note", "")
        teams = form.cleaned_data.get("teams")
        slugs = sorted(team.slug for team in teams) if teams is not None else None
        if not change:
            version = mode_create(mode=obj, by=request.user, note=note, teams=slugs)
        else:
            fields = {name: getattr(obj, name) for name in VERSIONED_FIELDS if name != "teams"}
            if slugs is not None:
                fields["teams"] = slugs
            as_draft = "_save_draft" in request.POST  # "Save as draft": not live, whoever saves it
            version = mode_save_versioned(mode=obj, fields=fields, by=request.user, note=note, publish=not as_draft)
        if version.state != version.State.PUBLISHED:
            self.message_user(
                request,
                f"Saved as draft version {version.number}: nothing changes for anyone until it is published.",
                messages.WARNING,
            )

    def response_change(self, request, obj):
        if "_save_draft" in request.POST:  # back to the page, where the draft is listed
            return redirect("admin:modes_agentmode_change", obj.pk)
        return super().response_change(request, obj)

    def save_related(self, request, form, formsets, change):
        # The teams are a versioned field: save_model wrote them with the version that was published.
        for formset in formsets:
            self.save_formset(request, form, formset, change=change)

    def get_queryset(self, request):
        return super().get_queryset(request).prefetch_related("teams")

    @admin.display(description="teams")
    def teams_shown(self, mode) -> str:
        """ "Every team", or the names of the teams the mode is for."""
        names = sorted(team.name for team in mode.teams.all())
        return ", ".join(names) if names else "Every team"

    def has_delete_permission(self, request, obj=None):
        if obj is not None and obj.is_default:
            return False
        return super().has_delete_permission(request, obj)

    def get_form(self, request, obj=None, change=False, **kwargs):
        form = super().get_form(request, obj, change=change, **kwargs)
        if obj is not None and obj.is_default and "is_default" in form.base_fields:
            # The page has no Delete for the default mode: say why where the curator looks for it.
            form.base_fields["is_default"].help_text = DEFAULT_NOT_DELETABLE
        return form

    def delete_view(self, request, object_id, extra_context=None):
        """The default mode's delete page: back to its page, saying why (Django's bare 403 said nothing)."""
        mode = self.get_object(request, object_id)
        if mode is not None and mode.is_default and self.has_change_permission(request, mode):
            self.message_user(request, DEFAULT_NOT_DELETABLE, messages.ERROR)
            return redirect("admin:modes_agentmode_change", mode.pk)
        return super().delete_view(request, object_id, extra_context)

    def delete_model(self, request, obj):
        mode_delete(mode=obj, by=request.user)

    def delete_queryset(self, request, queryset):
        for mode in queryset:
            try:
                mode_delete(mode=mode, by=request.user)
            except ValidationError as exc:
                self.message_user(request, f"{mode.key}: {' '.join(exc.messages)}", messages.ERROR)

    @admin.action(description="Make the selected mode the default", permissions=["change"])
    def make_default(self, request, queryset):
        if queryset.count() != 1:
            self.message_user(request, "Select exactly one mode to make it the default.", messages.ERROR)
            return
        try:
            mode = mode_make_default(mode=queryset.get(), by=request.user)
        except ValidationError as exc:
            self.message_user(request, " ".join(exc.messages), messages.ERROR)
            return
        self.message_user(request, f"{mode.display_name} is now the default mode.", messages.SUCCESS)

    @admin.action(description="Activate the selected modes", permissions=["change"])
    def activate(self, request, queryset):
        self._set_active(request, queryset, active=True)

    @admin.action(description="Deactivate the selected modes", permissions=["change"])
    def deactivate(self, request, queryset):
        self._set_active(request, queryset, active=False)

    def _set_active(self, request, queryset, *, active: bool) -> None:
        """A catalog action (audited), not a version: the active flag is the catalog's state."""
        for mode in queryset:
            try:
                mode_set_active(mode=mode, active=active, by=request.user)
            except ValidationError as exc:
                self.message_user(request, f"{mode.key}: {' '.join(exc.messages)}", messages.ERROR)


@admin.register(TeamDefaultMode)
class TeamDefaultModeAdmin(admin.ModelAdmin):
    """A team's own default mode; saved through the service, which refuses a mode the team cannot use."""

    list_display = ["team", "mode", "set_by", "updated_at"]
    form = TeamDefaultModeForm
    list_select_related = ["team", "mode", "set_by"]
    readonly_fields = ["set_by", "updated_at"]
    fields = ["team", "mode", "set_by", "updated_at"]

    def get_readonly_fields(self, request, obj=None):
        return [*self.readonly_fields, "team"] if obj is not None else self.readonly_fields

    def save_model(self, request, obj, form, change):
        saved = team_default_mode_set(team=obj.team, mode=obj.mode.key, user=request.user)
        obj.pk = saved.pk if saved is not None else obj.pk  # the admin's redirect names the saved row


CSV_COLUMNS = [
    "created_at",
    "session_id",
    "team",
    "user",
    "previous_mode",
    "new_mode",
    "branch",
    "source",
    "reason",
    "turn_id",
    "tool_call_id",
    "mode_version",
]


def csv_safe(value) -> str:
    """A CSV cell that a spreadsheet will not run as a formula (CSV injection): text starting with
    = + - @ or a tab/carriage return gets a leading apostrophe. Shared with agents/admin.py."""
    text = "" if value is None else str(value)
    return "'" + text if text[:1] in ("=", "+", "-", "@", "\t", "\r") else text


def csv_download(name: str, header: list[str], rows: Iterable[list[Any]]) -> HttpResponse:
    """An audit export: `name`-<timestamp>.csv with `header` and `rows`, every cell through csv_safe.
    Shared with agents/admin.py."""
    stamp = timezone.now().strftime("%Y%m%d-%H%M%S")
    response = HttpResponse(content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{name}-{stamp}.csv"'
    writer = csv.writer(response)
    writer.writerow(header)
    for row in rows:
        writer.writerow([csv_safe(cell) for cell in row])
    return response


@admin.register(ModeHistory)
class ModeHistoryAdmin(AuditTrailAdminMixin, admin.ModelAdmin):
    """Read-only for everyone, superusers included: the audit trail is append-only."""

    list_display = [
        "created_at",
        "session",
        "team",
        "user",
        "previous_mode",
        "new_mode",
        "mode_version",
        "branch",
        "source",
        "reason",
        "approval",
    ]
    readonly_fields = ["approval"]
    list_filter = ["team", "user", "previous_mode", "new_mode", "source", "branch", "created_at"]
    date_hierarchy = "created_at"
    search_fields = ["session__id", "reason", "user__username", "previous_mode", "new_mode"]
    list_select_related = ["session", "team", "user"]
    actions = ["export_csv"]

    def get_queryset(self, request):
        # The approval that consented to a change by the model: the ToolApproval of the same turn and
        # tool call (agents/approvals.py), approved. Subqueries, so the changelist stays one query.
        # By app label: `modes` never imports `agents`.
        approvals = (
            apps.get_model("agents", "ToolApproval")
            .objects.filter(turn=OuterRef("turn"), tool_call_id=OuterRef("tool_call_id"), decision="approved")
            .exclude(tool_call_id="")
            .order_by("-decided_at")
        )
        return (
            super()
            .get_queryset(request)
            .annotate(
                approval_id=Subquery(approvals.values("pk")[:1]),
                approval_by=Subquery(approvals.values("decided_by__username")[:1]),
                approval_at=Subquery(approvals.values("decided_at")[:1]),
            )
        )

    @admin.display(description="approval")
    def approval(self, entry) -> str:
        if getattr(entry, "approval_id", None) is None:
            return "—"
        text = "approved"
        if entry.approval_by:
            text += f" by {entry.approval_by}"
        if entry.approval_at:
            text += f" at {date_format(timezone.localtime(entry.approval_at), 'H:i')}"
        return text

    def has_export_permission(self, request):
        return request.user.has_perm("modes.export_modehistory")

    @admin.action(description="Export selected entries as CSV", permissions=["export"])
    def export_csv(self, request, queryset):
        rows = queryset.select_related("team", "user").order_by("created_at", "id")
        return csv_download(
            "mode-history",
            CSV_COLUMNS,
            (
                [
                    entry.created_at.isoformat(),
                    entry.session_id,
                    entry.team.name,
                    entry.user.username if entry.user else "",
                    entry.previous_mode,
                    entry.new_mode,
                    "true" if entry.branch else "false",
                    entry.source,
                    entry.reason,
                    entry.turn_id or "",
                    entry.tool_call_id,
                    entry.mode_version or "",
                ]
                for entry in rows.iterator()
            ),
        )


CATALOG_CSV_COLUMNS = ["created_at", "user", "action", "mode", "version", "note"]


@admin.register(CatalogEvent)
class CatalogEventAdmin(AuditTrailAdminMixin, admin.ModelAdmin):
    """The catalog's audit trail: read-only for everyone, superusers included; auditors export it."""

    list_display = ["created_at", "user", "action", "mode_key", "version", "note"]
    list_filter = ["action", "mode_key", "user", "created_at"]
    date_hierarchy = "created_at"
    search_fields = ["mode_key", "note", "user__username"]
    list_select_related = ["user"]
    actions = ["export_csv"]

    def has_export_permission(self, request):
        return request.user.has_perm("modes.export_catalogevent")

    @admin.action(description="Export selected events as CSV", permissions=["export"])
    def export_csv(self, request, queryset):
        rows = queryset.select_related("user").order_by("created_at", "id")
        return csv_download(
            "catalog-events",
            CATALOG_CSV_COLUMNS,
            (
                [
                    event.created_at.isoformat(),
                    event.user.username if event.user else "",
                    event.action,
                    event.mode_key,
                    "" if event.version is None else event.version,
                    event.note,
                ]
                for event in rows.iterator()
            ),
        )
