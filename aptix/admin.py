from django.contrib import admin, messages

from .models import ApiToken, Membership, Team, UserPreferences
from .tokens import api_token_create


class MembershipInline(admin.TabularInline):
    model = Membership
    extra = 1
    autocomplete_fields = ["user"]


@admin.register(Team)
class TeamAdmin(admin.ModelAdmin):
    list_display = ["name", "slug", "monthly_token_quota", "monthly_cost_quota", "created_at"]
    search_fields = ["name", "slug"]
    prepopulated_fields = {"slug": ["name"]}
    inlines = [MembershipInline]

    class Media:
        js = ["js/admin_prepopulate.js"]  # the slug follows a pasted name too, not only a typed one


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    """Tokens are created here or with `manage.py create_api_token`; the secret is shown once."""

    list_display = ["key_prefix", "user", "name", "created_at", "last_used_at"]
    search_fields = ["user__username", "name", "key_prefix"]
    fields = ["user", "name", "key_prefix", "created_at", "last_used_at"]
    readonly_fields = ["key_prefix", "created_at", "last_used_at"]
    autocomplete_fields = ["user"]

    def has_change_permission(self, request, obj=None):
        return obj is None and super().has_change_permission(request, obj)

    def save_model(self, request, obj, form, change):
        token, secret = api_token_create(user=obj.user, name=obj.name)
        obj.pk = token.pk
        obj.key_prefix, obj.key_hash = token.key_prefix, token.key_hash
        self.message_user(
            request,
            f"API token for {obj.user}: {secret} — copy it now, it will not be shown again.",
            messages.WARNING,
        )


@admin.register(UserPreferences)
class UserPreferencesAdmin(admin.ModelAdmin):
    list_display = ["user", "default_mode", "default_execution", "theme", "notify_turns", "updated_at"]
    search_fields = ["user__username"]
    autocomplete_fields = ["user"]
