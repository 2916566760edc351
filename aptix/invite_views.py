"""The invite pages (aptix/invites.py): /invites/ where staff and team owners invite someone, and the
link's page, /invite/<secret>/, where the invitee chooses a password. The link's page is the only
page besides /login/ open without signing in; requests to it are counted per address
(APTIX_RATE_INVITES, 429 past it) like logins are."""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.contrib.auth import get_user_model, login
from django.contrib.auth.decorators import login_required
from django.contrib.auth.forms import SetPasswordForm
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods, require_POST

from .invites import (
    ERROR_PASSWORDS_OFF,
    invite_accept,
    invite_create,
    invite_get,
    invite_list,
    invite_renew,
    invite_revoke,
    invite_send,
    invite_teams,
    invites_on,
)
from .models import Invite, Membership, Team
from .ratelimits import INVITES, address_key, rate_limit
from .shown_once import show_once, take_once

# The status of a link that cannot be accepted: unknown, or gone (accepted, withdrawn, expired).
LINK_STATUS = {"unknown": 404, "used": 410, "revoked": 410, "expired": 410, "passwords_off": 403}
NOT_AN_OWNER = "Only administrators and the owners of a team invite people."
INVITE_GONE = "No such invitation: it was accepted or withdrawn already, or it is not one you can manage."
NEW_LINK = "new_invite_link"  # the key of a new link, shown once after the redirect (aptix/shown_once.py)


class InviteForm(forms.Form):
    email = forms.EmailField(label="E-mail address", max_length=150)
    # Any team: whether the inviter may invite into it is the service's to say (and to refuse, clearly).
    team = forms.ModelChoiceField(queryset=Team.objects.all(), label="Team")
    role = forms.ChoiceField(
        choices=Membership.Role.choices, initial=Membership.Role.MEMBER, label="Role", widget=forms.RadioSelect
    )


@require_http_methods(["GET", "POST"])
@login_required
def invites_page(request: HttpRequest) -> HttpResponse:
    """The invite form and the invites not accepted yet; a POST makes one and shows its link."""
    if not invites_on():
        return render(request, "aptix/invites.html", {"refused": ERROR_PASSWORDS_OFF}, status=403)
    teams = list(invite_teams(user=request.user))
    if not teams:
        return render(request, "aptix/invites.html", {"refused": NOT_AN_OWNER}, status=403)
    form = InviteForm(request.POST or None)
    status = 200
    if request.method == "POST":
        status = _create(request, form)
        if status == 302:  # Post/Redirect/Get: a reload of the page shown invites nobody twice
            return redirect("invites")
    return _page(request, form, teams, status=status)


def _page(request: HttpRequest, form: InviteForm, teams: list[Team], *, status: int = 200) -> HttpResponse:
    created = take_once(request, NEW_LINK)  # made or sent again just now: its link, this once
    invite = Invite.objects.filter(pk=created["invite"]).first() if created else None
    shown = {**created, "invite": invite} if created and invite else None
    context = {"form": form, "teams": teams, "invites": invite_list(user=request.user), "created": shown}
    return render(request, "aptix/invites.html", context, status=status)


def _create(request: HttpRequest, form: InviteForm) -> int:
    if not form.is_valid():
        return 400
    try:
        invite, secret = invite_create(inviter=request.user, **form.cleaned_data)
    except ValidationError as exc:
        for field, field_errors in exc.update_error_dict({}).items():  # ValidationErrors: their codes stay
            form.add_error(field if field in form.fields else None, field_errors)
        return 403 if form.has_error("team", "forbidden") else 400
    _send_and_show(request, invite, secret)
    return 302


def _send_and_show(request: HttpRequest, invite: Invite, secret: str) -> None:
    """E-mail the link and keep it for the page the redirect shows (once)."""
    link = request.build_absolute_uri(reverse("invite-accept", args=[secret]))
    sent = invite_send(invite=invite, link=link)
    show_once(request, NEW_LINK, {"invite": invite.pk, "link": link, "sent": sent})


@require_POST
@login_required
def invite_revoke_view(request: HttpRequest, invite_id: int) -> HttpResponse:
    """Withdraw an invitation: its link is refused from now on."""
    invite = invite_revoke(user=request.user, invite_id=invite_id)
    if invite is None:
        return _gone(request)
    messages.success(request, f"The invitation of {invite.email} was withdrawn: its link no longer works.")
    return redirect("invites")


@require_POST
@login_required
def invite_resend_view(request: HttpRequest, invite_id: int) -> HttpResponse:
    """Send an invitation again: a new link (the old one stops working), valid for another 7 days."""
    try:
        renewed = invite_renew(user=request.user, invite_id=invite_id)
    except ValidationError as exc:
        messages.error(request, " ".join(exc.messages))
        return redirect("invites")
    if renewed is None:
        return _gone(request)
    _send_and_show(request, *renewed)
    return redirect("invites")


def _gone(request: HttpRequest) -> HttpResponse:
    messages.error(request, INVITE_GONE)
    teams = list(invite_teams(user=request.user))
    return _page(request, InviteForm(), teams, status=404)


@require_http_methods(["GET", "POST"])
def invite_accept_view(request: HttpRequest, secret: str) -> HttpResponse:
    """The link's page: choose a password, and be signed in as the new member of the team."""
    limited = rate_limit(INVITES, address_key(request), request)
    if limited is not None:
        response = render(request, "registration/invite_accept.html", {"error": limited.message}, status=429)
        response["Retry-After"] = str(limited.retry_after)
        return response
    try:
        invite = invite_get(secret=secret)
    except ValidationError as exc:
        return _link_refused(request, exc)
    form = SetPasswordForm(get_user_model()(username=invite.email, email=invite.email), request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            user = invite_accept(secret=secret, password=form.cleaned_data["new_password1"])
        except ValidationError as exc:
            return _link_refused(request, exc)
        login(request, user, backend="django.contrib.auth.backends.ModelBackend")
        messages.success(request, f"Welcome to {invite.team}. You sign in with {invite.email} from now on.")
        return redirect("home")
    status = 400 if request.method == "POST" else 200
    return render(request, "registration/invite_accept.html", {"invite": invite, "form": form}, status=status)


def _link_refused(request: HttpRequest, exc: ValidationError) -> HttpResponse:
    if hasattr(exc, "error_dict"):  # a field's: the address has an account by now
        status = 409
    else:
        status = LINK_STATUS.get(exc.error_list[0].code or "", 404)
    return render(request, "registration/invite_accept.html", {"error": " ".join(exc.messages)}, status=status)
