from __future__ import annotations

from django.conf import settings
from django.contrib import admin

from .models import ExternalIdentity, GroupRule


@admin.register(GroupRule)
class GroupRuleAdmin(admin.ModelAdmin):
    """Claim value → team and role, or → staff with a permission group; applied at every sign-in."""

    list_display = ["claim_value", "team", "role", "group"]
    list_filter = ["team", "group"]
    search_fields = ["claim_value", "team__name"]
    autocomplete_fields = ["team"]


@admin.register(ExternalIdentity)
class ExternalIdentityAdmin(admin.ModelAdmin):
    """Who each provider account is here. Add one with an empty subject to link a local account: the
    next sign-in with that user's e-mail address claims it (otherwise such a sign-in is refused)."""

    list_display = ["user", "issuer", "subject", "granted_staff", "created_at", "last_sign_in_at"]
    search_fields = ["user__username", "user__email", "subject"]
    readonly_fields = ["granted_staff", "created_at", "last_sign_in_at"]
    autocomplete_fields = ["user"]

    def get_changeform_initial_data(self, request):
        return {
            "issuer": getattr(settings, "APTIX_OIDC_ISSUER", None) or "",
            **super().get_changeform_initial_data(request),
        }
