"""Connections in the admin: the audit trail (read-only, for auditors too) and which users hold
credentials for which server (never what they hold; a superuser may delete a row to cut one off)."""

from __future__ import annotations

from django.contrib import admin

from .models import ConnectionEvent, Credential


@admin.register(ConnectionEvent)
class ConnectionEventAdmin(admin.ModelAdmin):
    list_display = ["at", "username", "server", "action", "account"]
    list_filter = ["action", "server"]
    search_fields = ["username", "server", "account"]
    date_hierarchy = "at"

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


@admin.register(Credential)
class CredentialAdmin(admin.ModelAdmin):
    list_display = ["user", "server", "kind", "account", "expires_at", "updated_at"]
    list_filter = ["kind", "server"]
    search_fields = ["user__username", "server", "account"]
    fields = readonly_fields = ("user", "server", "kind", "account", "expires_at", "created_at", "updated_at")

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False
