"""The user's settings page (/settings/): password, new-session defaults, theme, turn notifications,
and their own API tokens. Each form posts to its own action; a refused one gets the page again with
the form's errors (400), a token that is not the user's a 404."""

from __future__ import annotations

from typing import Any, cast

from django import forms
from django.contrib import messages
from django.contrib.auth import update_session_auth_hash
from django.contrib.auth.decorators import login_required
from django.contrib.auth.forms import PasswordChangeForm
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from agents.web.connections import user_connections
from aptix.invites import invite_allowed
from aptix.models import ApiToken, UserPreferences
from aptix.preferences import preferences_get, preferences_update
from aptix.shown_once import show_once, take_once
from aptix.teams import team_list_for_user
from aptix.tokens import api_token_create, api_token_get, api_token_list, api_token_revoke, password_change
from modes.catalog import modes_for_teams
from modes.teams import team_default_rows

CATALOG_DEFAULT = ""  # the default mode choice meaning "the team's default, else the catalog's"
NEW_TOKEN = "new_api_token"  # the key of a new token's secret, shown once (aptix/shown_once.py)
TOKEN_GONE = "No such API token: it was revoked already, or it is not yours."


class PreferencesForm(forms.Form):
    default_mode = forms.ChoiceField(choices=(), required=False, label="Default mode")
    default_execution = forms.ChoiceField(
        choices=UserPreferences.Execution.choices, widget=forms.RadioSelect, label="Default execution"
    )
    theme = forms.ChoiceField(choices=UserPreferences.Theme.choices, widget=forms.RadioSelect)
    notify_turns = forms.BooleanField(
        required=False, label="Notify me when a turn finishes while its tab is in the background"
    )
    notify_inbox = forms.BooleanField(
        required=False, label="Notify me when an automation's approval or notice arrives in my inbox"
    )

    def __init__(self, *args: Any, user: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        modes = [(m.key, m.display_name) for m in modes_for_teams(team_list_for_user(user=user))]
        field = cast(forms.ChoiceField, self.fields["default_mode"])
        field.choices = [(CATALOG_DEFAULT, "The team's default"), *modes]


class TokenCreateForm(forms.Form):
    name = forms.CharField(max_length=100, required=False, help_text="What it is for, e.g. “laptop”.")
    interfaces = forms.MultipleChoiceField(
        choices=ApiToken.Interface.choices,
        widget=forms.CheckboxSelectMultiple,
        required=False,
        label="Works for",
        help_text="None ticked: all of them.",
    )
    modes = forms.MultipleChoiceField(
        choices=(),
        widget=forms.CheckboxSelectMultiple,
        required=False,
        label="Modes",
        help_text="None ticked: every mode you may use.",
    )

    def __init__(self, *args: Any, user: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        field = cast(forms.MultipleChoiceField, self.fields["modes"])
        field.choices = [(m.key, m.display_name) for m in modes_for_teams(team_list_for_user(user=user))]


def _preferences_form(user: Any) -> PreferencesForm:
    p = preferences_get(user=user)
    initial = {
        "default_mode": p.default_mode,
        "default_execution": p.default_execution,
        "theme": p.theme,
        "notify_turns": p.notify_turns,
        "notify_inbox": p.notify_inbox,
    }
    return PreferencesForm(initial=initial, user=user)


class PasswordForm(PasswordChangeForm):
    """Django's form without its autofocus on "Old password": the settings page is visited for its
    preferences and tokens as much as for a new password, and a page that puts the caret in a password
    field (the keyboard and screen reader start there) is one that says "change your password"."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["old_password"].widget.attrs.pop("autofocus", None)


def settings_render(request: HttpRequest, *, status: int = 200, **forms_and_more: Any) -> HttpResponse:
    """The settings page with its forms (those given replace the blank ones: a refused form's errors)."""
    context = {
        "password_form": PasswordForm(request.user),
        "preferences_form": _preferences_form(request.user),
        "token_form": TokenCreateForm(user=request.user),
        "tokens": api_token_list(user=request.user),
        "can_invite": invite_allowed(user=request.user),
        "team_defaults": team_default_rows(user=request.user),
        "connections": user_connections(cast(int, request.user.pk)),
        **forms_and_more,
    }
    return render(request, "agents/settings.html", context, status=status)


@require_GET
@login_required
def settings_page(request: HttpRequest) -> HttpResponse:
    new = take_once(request, NEW_TOKEN)  # just created: its secret, this once
    token = api_token_get(user=request.user, token_id=new["id"]) if new else None
    return settings_render(request, new_token=token, new_secret=new["secret"] if token else None)


@require_POST
@login_required
def settings_password(request: HttpRequest) -> HttpResponse:
    form = PasswordForm(request.user, request.POST)
    if not form.is_valid():
        messages.error(request, "Your password was not changed. See the form for details.")
        return settings_render(request, status=400, password_form=form)
    user, told = password_change(form=form)
    update_session_auth_hash(request, user)  # this login stays; the user's other logins end
    messages.success(request, told)
    return redirect("settings")


@require_POST
@login_required
def settings_preferences(request: HttpRequest) -> HttpResponse:
    form = PreferencesForm(request.POST, user=request.user)
    if not form.is_valid():
        messages.error(request, "Your preferences were not saved. See the form for details.")
        return settings_render(request, status=400, preferences_form=form)
    preferences_update(user=request.user, **form.cleaned_data)
    messages.success(request, "Your preferences were saved.")
    return redirect("settings")


@require_POST
@login_required
def settings_token_create(request: HttpRequest) -> HttpResponse:
    form = TokenCreateForm(request.POST, user=request.user)
    if not form.is_valid():
        messages.error(request, "No token was created. See the form for details.")
        return settings_render(request, status=400, token_form=form)
    token, secret = api_token_create(user=request.user, **form.cleaned_data)
    # Post/Redirect/Get: a reload of the page shown makes no second token. The secret is drawn on the
    # redirected page once (aptix/shown_once.py), and never stored otherwise.
    show_once(request, NEW_TOKEN, {"id": token.pk, "secret": secret})
    return redirect(reverse("settings") + "#tokens-heading")


@require_POST
@login_required
def settings_token_revoke(request: HttpRequest, token_id: int) -> HttpResponse:
    if not api_token_revoke(user=request.user, token_id=token_id):
        messages.error(request, TOKEN_GONE)
        return settings_render(request, status=404)
    messages.success(request, "The API token was revoked: programs using it are refused from now on.")
    return redirect("settings")
