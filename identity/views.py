"""The login page (the provider's button, and the password form while local login is on), the
break-glass password form for superusers, the provider's sign-in (start and callback), sign-out
(Aptix's session, then the provider's) and the page of a user whom no group gives a team."""

from __future__ import annotations

from typing import Any

from django import forms
from django.conf import settings
from django.contrib import admin, messages
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_required
from django.contrib.auth.forms import AuthenticationForm
from django.core.exceptions import SuspiciousOperation
from django.http import HttpRequest, HttpResponse, HttpResponseBase, HttpResponseRedirect
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.http import urlencode
from django.views.decorators.http import require_GET
from mozilla_django_oidc.views import OIDCAuthenticationCallbackView, OIDCAuthenticationRequestView

from aptix.lockout import password_sign_in_on
from aptix.teams import team_list_for_user

from .backend import FAILED, UNREACHABLE
from .provider import ProviderError, configured, end_session_url, provider

LOCAL_LOGIN_OFF = "Sign-in with a password is turned off here: sign in with {provider}."
SUPERUSERS_ONLY = "Only superusers sign in with a password here; everybody else signs in with {provider}."


def local_login_on() -> bool:
    """The password form is on the login page (aptix/lockout.py `password_sign_in_on`)."""
    return password_sign_in_on()


def _login_context(**extra: Any) -> dict[str, Any]:
    return {"provider_name": settings.APTIX_OIDC_NAME if configured() else None, **extra}


class SignInView(auth_views.LoginView):
    """/login/: "Sign in with <provider>" when one is configured, and the password form unless local
    login is off (then a posted password is refused, whoever sends it: superusers use /login/local/)."""

    redirect_authenticated_user = True

    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        context = super().get_context_data(**kwargs, **_login_context(password_form=local_login_on()))
        context["form_action"] = "login"
        context["next_query"] = urlencode({"next": context.get("next") or ""})
        return context

    def post(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if not local_login_on():
            messages.error(request, LOCAL_LOGIN_OFF.format(provider=settings.APTIX_OIDC_NAME))
            return self.render_to_response(self.get_context_data(), status=403)
        return super().post(request, *args, **kwargs)


class SuperuserAuthenticationForm(AuthenticationForm):
    def confirm_login_allowed(self, user: Any) -> None:
        super().confirm_login_allowed(user)
        if not user.is_superuser:
            raise forms.ValidationError(
                SUPERUSERS_ONLY.format(provider=settings.APTIX_OIDC_NAME), code="superusers_only"
            )


class BreakGlassView(auth_views.LoginView):
    """/login/local/: with local login off, the password form for superusers (the provider is down,
    or misconfigured). With local login on it is the login page."""

    form_class = SuperuserAuthenticationForm
    redirect_authenticated_user = True

    def dispatch(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
        if local_login_on():
            return redirect("login")
        return super().dispatch(request, *args, **kwargs)

    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        context = _login_context(password_form=True, form_action="login-local", break_glass=True)
        return super().get_context_data(**kwargs, **context)


def admin_login(request: HttpRequest) -> HttpResponse:
    """The admin's own password form, unless local login is off (it would be a way round it)."""
    if local_login_on():
        return admin.site.login(request)
    return HttpResponseRedirect(f"{reverse('login')}?{urlencode({'next': request.GET.get('next', '/admin/')})}")


class ProviderStartView(OIDCAuthenticationRequestView):
    """The button's POST (CSRF-checked, so no other site can start a sign-in in the user's name): a new
    state, nonce and PKCE verifier in the session, then off to the provider's authorization endpoint."""

    http_method_names = ("post",)

    def __init__(self, **kwargs: Any) -> None:
        super(OIDCAuthenticationRequestView, self).__init__(**kwargs)  # its own reads static endpoints

    def post(self, request: HttpRequest) -> HttpResponse:
        if not configured():
            return redirect("login")
        try:
            self.OIDC_OP_AUTH_ENDPOINT = provider().authorization_endpoint
        except ProviderError:
            messages.error(request, UNREACHABLE.format(provider=settings.APTIX_OIDC_NAME))
            return redirect("login")
        self.OIDC_RP_CLIENT_ID = settings.OIDC_RP_CLIENT_ID
        return super().get(request)


class ProviderCallbackView(OIDCAuthenticationCallbackView):
    """The provider sends the browser back here with `code` and `state`. A missing or unknown state,
    an error from the provider and every refused token end on the login page, saying so."""

    def get(self, request: HttpRequest) -> HttpResponse:
        if not configured():
            return redirect("login")
        if error := request.GET.get("error"):
            messages.error(request, f"{settings.APTIX_OIDC_NAME} did not sign you in ({error[:100]}).")
        elif request.GET.get("state") not in (request.session.get("oidc_states") or {}) or not request.GET.get("code"):
            # No state, or one this browser's session never asked for or has already used: forged or replayed.
            messages.error(request, FAILED.format(provider=settings.APTIX_OIDC_NAME))
            return self.login_failure()
        try:
            return super().get(request)
        except SuspiciousOperation:  # the state went between the look above and the library's own
            messages.error(request, FAILED.format(provider=settings.APTIX_OIDC_NAME))
            return self.login_failure()

    @property
    def success_url(self) -> str:
        if not team_list_for_user(user=self.user).exists():
            return reverse("identity-no-team")
        return super().success_url


class SignOutView(auth_views.LogoutView):
    """Ends Aptix's session (which closes that login's sockets), then the provider's when the user
    signed in there and it offers RP-initiated logout (its end_session_endpoint)."""

    def post(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        at_provider = end_session_url(request) if configured() and request.session.get("oidc_id_token") else None
        response = super().post(request, *args, **kwargs)
        return HttpResponseRedirect(at_provider) if at_provider else response


@require_GET
@login_required
def no_team(request: HttpRequest) -> HttpResponse:
    """Signed in, but no group rule gives the user a team: say so instead of an empty workspace."""
    if team_list_for_user(user=request.user).exists():
        return redirect("home")
    return render(request, "identity/no_team.html", {"provider_name": settings.APTIX_OIDC_NAME}, status=403)
