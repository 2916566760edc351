from __future__ import annotations

from django.contrib import admin

from .models import AgentSession, Turn, TurnEvent


class ReadOnlyAdminMixin:
    """Sessions, turns and events are written by the pipeline, never edited by hand."""

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False


class TurnInline(ReadOnlyAdminMixin, admin.TabularInline):
    model = Turn
    extra = 0
    show_change_link = True
    can_delete = False
    fields = readonly_fields = ("index", "status", "execution", "mode", "response_mode", "user_message", "created_at")


class TurnEventInline(ReadOnlyAdminMixin, admin.TabularInline):
    model = TurnEvent
    extra = 0
    can_delete = False
    fields = readonly_fields = ("seq", "type", "payload", "created_at")


@admin.register(AgentSession)
class AgentSessionAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    list_display = ["__str__", "team", "user", "mode", "execution", "updated_at"]
    list_filter = ["team", "mode", "execution"]
    search_fields = ["id", "title", "user__username"]
    list_select_related = ["team", "user"]
    inlines = [TurnInline]


@admin.register(Turn)
class TurnAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    list_display = ["__str__", "status", "execution", "mode", "response_mode", "step_count", "created_at"]
    list_filter = ["status", "execution", "mode"]
    search_fields = ["id", "session__id", "user_message"]
    list_select_related = ["session"]
    inlines = [TurnEventInline]


@admin.register(TurnEvent)
class TurnEventAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    list_display = ["turn", "seq", "type", "created_at"]
    list_filter = ["type"]
    search_fields = ["turn__id"]
    list_select_related = ["turn"]
