from django import forms
from django.contrib import admin, messages
from django.core.exceptions import ValidationError
from django.urls import reverse

from .invites import invite_check, invite_create, invite_send
from .models import ApiToken, Invite, Membership, Team, UserPreferences
from .tokens import api_token_create, api_token_limits


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


class ApiTokenForm(forms.ModelForm):
    class Meta:
        model = ApiToken
        fields = ["user", "name", "interfaces", "modes"]

    def clean(self):
        cleaned = super().clean() or {}
        if not self.errors:  # a list of api/mcp/a2a and a list of mode keys, or the field's error
            cleaned["interfaces"], cleaned["modes"] = api_token_limits(cleaned.get("interfaces"), cleaned.get("modes"))
        return cleaned


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    """Tokens are created here or with `manage.py create_api_token`; the secret is shown once. Limits:
    `interfaces` a list of api, mcp, a2a; `modes` a list of mode keys (empty lists: no limit)."""

    form = ApiTokenForm

    list_display = ["key_prefix", "user", "name", "interfaces", "modes", "created_at", "last_used_at"]
    search_fields = ["user__username", "name", "key_prefix"]
    fields = ["user", "name", "interfaces", "modes", "key_prefix", "created_at", "last_used_at"]
    readonly_fields = ["key_prefix", "created_at", "last_used_at"]
    autocomplete_fields = ["user"]

    def has_change_permission(self, request, obj=None):
        return obj is None and super().has_change_permission(request, obj)

    def save_model(self, request, obj, form, change):
        token, secret = api_token_create(user=obj.user, name=obj.name, interfaces=obj.interfaces, modes=obj.modes)
        obj.pk = token.pk
        obj.key_prefix, obj.key_hash = token.key_prefix, token.key_hash
        self.message_user(
            request,
            f"API token for {obj.user}: {secret} — copy it now, it will not be shown again.",
            messages.WARNING,
        )


@admin.register(UserPreferences)
class UserPreferencesAdmin(admin.ModelAdmin):
    list_display = ["user", "default_mode", "default_execution", "theme", "notify_turns", "notify_inbox", "updated_at"]
    search_fields = ["user__username"]
    autocomplete_fields = ["user"]


@admin.register(Invite)
class InviteAdmin(admin.ModelAdmin):
    """Adding a person in one step (aptix/invites.py): the e-mail, the team and the role; the link is
    e-mailed and shown once here. An invite is not edited: a new one is made instead."""

    list_display = ["email", "team", "role", "invited_by", "created_at", "expires_at", "accepted_at"]
    list_filter = ["team", "role"]
    search_fields = ["email", "team__name"]
    fields = ["email", "team", "role"]

    def has_change_permission(self, request, obj=None):
        return obj is None and super().has_change_permission(request, obj)

    def get_form(self, request, obj=None, change=False, **kwargs):
        form = super().get_form(request, obj, change=change, **kwargs)

        class CheckedInviteForm(form):  # type: ignore[misc,valid-type]
            """An address with an account, or a team the user may not invite into, is the form's error."""

            def clean(self):
                data = super().clean()
                if data.get("team") and data.get("email"):
                    try:
                        invite_check(inviter=request.user, team=data["team"], email=data["email"])
                    except ValidationError as exc:
                        self.add_error(None, exc.messages)
                return data

        return CheckedInviteForm

    def save_model(self, request, obj, form, change):
        try:
            invite, secret = invite_create(inviter=request.user, team=obj.team, email=obj.email, role=obj.role)
        except ValidationError as exc:  # checked by the form already: only a race gets here
            self.message_user(request, " ".join(exc.messages), messages.ERROR)
            return
        obj.pk = invite.pk
        link = request.build_absolute_uri(reverse("invite-accept", args=[secret]))
        sent = "E-mailed" if invite_send(invite=invite, link=link) else "The e-mail could not be sent"
        self.message_user(
            request,
            f"{sent} to {invite.email}. The link (shown only now, valid once for 7 days): {link}",
            messages.WARNING,
        )
