"""The admin's automations: every automation with its owner, last run and status (admins may pause
any: the action writes the audit row), their runs, the inbox's items and the audit — read-only for
auditors (automations/migrations/0002)."""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.db.models import OuterRef, QuerySet, Subquery
from django.http import HttpRequest

from aptix.audit_admin import AuditTrailAdminMixin

from .models import Automation, AutomationAudit, AutomationRun, InboxItem
from .services import automation_pause


class RunInline(admin.TabularInline):
    model = AutomationRun
    fields = ("created_at", "trigger", "scheduled_for", "attempt", "status", "session", "tokens", "error")
    readonly_fields = fields
    extra = 0
    max_num = 0
    can_delete = False
    show_change_link = True
    ordering = ("-created_at",)

    def get_queryset(self, request: HttpRequest) -> QuerySet[AutomationRun]:
        return super().get_queryset(request).select_related("session")


@admin.register(Automation)
class AutomationAdmin(admin.ModelAdmin):
    list_display = ("name", "owner", "team", "enabled", "schedule", "last_run_at", "last_status", "paused_reason")
    list_filter = ("enabled", "team", "webhook")
    search_fields = ("name", "owner__username", "prompt")
    actions = ("pause",)
    inlines = (RunInline,)
    exclude = ("webhook_salt",)
    readonly_fields = [f.name for f in Automation._meta.fields if f.name != "webhook_salt"]

    def get_queryset(self, request: HttpRequest) -> QuerySet[Automation]:
        last = AutomationRun.objects.filter(automation=OuterRef("pk")).order_by("-created_at")
        return (
            super()
            .get_queryset(request)
            .select_related("owner", "team")
            .annotate(last_run=Subquery(last.values("created_at")[:1]), last_state=Subquery(last.values("status")[:1]))
        )

    @admin.display(description="Schedule")
    def schedule(self, obj: Automation) -> str:
        return f"{obj.cron} ({obj.timezone})" if obj.cron else ("once" if obj.run_at else "—")

    @admin.display(description="Last run", ordering="last_run")
    def last_run_at(self, obj: Any) -> Any:
        return obj.last_run

    @admin.display(description="Last status")
    def last_status(self, obj: Any) -> str:
        return obj.last_state or "—"

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # made by their owners, on the Automations page or the API

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False  # its fields are the owner's; admins pause (the action)

    @admin.action(description="Pause the selected automations", permissions=["pause"])
    def pause(self, request: HttpRequest, queryset: QuerySet[Automation]) -> None:
        for automation in queryset.filter(enabled=True):
            automation_pause(automation=automation, by=request.user, reason=f"Paused by {request.user.get_username()}")
        messages.success(request, "Paused.")

    def has_pause_permission(self, request: HttpRequest) -> bool:
        return request.user.is_superuser or request.user.has_perm("automations.delete_automation")


class ReadOnlyAuditAdmin(AuditTrailAdminMixin, admin.ModelAdmin):
    pass


@admin.register(AutomationRun)
class AutomationRunAdmin(ReadOnlyAuditAdmin):
    list_display = ("created_at", "automation", "trigger", "scheduled_for", "attempt", "status", "tokens")
    list_filter = ("status", "trigger")
    search_fields = ("automation__name", "error")
    list_select_related = ("automation",)


@admin.register(InboxItem)
class InboxItemAdmin(ReadOnlyAuditAdmin):
    list_display = ("created_at", "user", "kind", "text", "resolved_at")
    list_filter = ("kind",)
    list_select_related = ("user",)


@admin.register(AutomationAudit)
class AutomationAuditAdmin(ReadOnlyAuditAdmin):
    list_display = ("at", "action", "automation_name", "actor_name", "detail")
    list_filter = ("action",)
    search_fields = ("automation_name", "actor_name", "detail")
