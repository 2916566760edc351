"""The file audit in the admin: read-only for everyone, superusers included (rows are written by
files/services.py only), visible to the Auditors group (files/migrations/0002)."""

from __future__ import annotations

from django.contrib import admin

from .models import FileAudit


@admin.register(FileAudit)
class FileAuditAdmin(admin.ModelAdmin):
    list_display = ["at", "action", "actor_name", "name", "size", "sha256", "session_id", "project_id", "file_id"]
    list_filter = ["action", "at"]
    date_hierarchy = "at"
    search_fields = ["name", "actor_name", "sha256", "file_id", "session_id", "project_id"]

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False
