"""Projects in the admin, for auditors: the projects and their files, and the project audit (creations,
deletions, membership changes). Read-only for everyone, superusers included: projects are changed
through their pages and API (projects/services.py), which write the audit; the Auditors group views
them (projects/migrations, the auditors' grants)."""

from __future__ import annotations

from django.contrib import admin

from files.models import SessionFile

from .models import Project, ProjectAudit


class ReadOnlyAdmin(admin.ModelAdmin):
    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


class ProjectFileInline(admin.TabularInline):
    """The project's files, live and deleted (the audit's view of them): seen by whoever may view the project."""

    model = SessionFile
    fk_name = "project"
    fields = readonly_fields = ("name", "kind", "format", "size", "owner", "created_at", "deleted_at", "sha256")
    extra = 0
    can_delete = False
    show_change_link = False
    verbose_name = "file"
    verbose_name_plural = "files"

    def has_view_permission(self, request, obj=None):
        return request.user.has_perm("projects.view_project")

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


@admin.register(Project)
class ProjectAdmin(ReadOnlyAdmin):
    list_display = ["name", "team", "whole_team", "created_by", "created_at", "archived_at"]
    list_filter = ["team", "whole_team"]
    search_fields = ["name", "id"]
    fields = readonly_fields = (
        "id",
        "name",
        "team",
        "description",
        "instructions",
        "default_mode",
        "whole_team",
        "members",
    )
    inlines = [ProjectFileInline]


@admin.register(ProjectAudit)
class ProjectAuditAdmin(ReadOnlyAdmin):
    list_display = ["at", "action", "actor_name", "project_name", "detail", "project_id"]
    list_filter = ["action", "at"]
    date_hierarchy = "at"
    search_fields = ["project_name", "project_id", "actor_name", "detail"]
