"""Login lockout (django-axes): the authentication backend that refuses a locked-out login, and the
page a locked-out login gets (429 with Retry-After). Configured in settings (APTIX_LOGIN_*)."""

from __future__ import annotations

from axes.backends import AxesStandaloneBackend
from axes.exceptions import AxesBackendPermissionDenied
from axes.helpers import get_client_username, get_cool_off
from axes.models import AccessAttempt
from django.conf import settings
from django.db.models import Sum
from django.shortcuts import render
from django.utils import timezone

from . import metrics
from .ratelimits import client_ip


def password_sign_in_on() -> bool:
    """Whether people sign in with a password: always without an identity provider, else unless
    APTIX_LOCAL_LOGIN=false (the login page's form, identity/views.py; invitations, which make password
    accounts, invites.py). Superusers' break-glass login is apart (identity/views.py)."""
    return bool(settings.APTIX_LOCAL_LOGIN or not getattr(settings, "APTIX_OIDC_ISSUER", None))


class LockoutBackend(AxesStandaloneBackend):
    """django-axes' lockout check before the ModelBackend, except for authenticate() calls made
    without a request: those come from code, not from a login form (the test client's login(), a
    management command), and django-axes cannot count them. Every login page of Aptix (/login/ and
    the admin's) passes its request, so each of them is counted and locked.

    Before it, the address check: django-axes counts failures per username and address, so one
    password tried over many accounts from one address (spraying) never locks anything. The failures
    it recorded from the request's address within the cool-off, summed over every username, refuse
    that address's logins past APTIX_LOGIN_ADDRESS_LIMIT; the same users from elsewhere are not
    affected."""

    def authenticate(self, request, username=None, password=None, **kwargs):
        if request is None or provider_callback(request, kwargs):
            return None
        limit = settings.APTIX_LOGIN_ADDRESS_LIMIT
        if settings.AXES_ENABLED and limit and address_failures(request) >= limit:
            request.axes_locked_out = True  # the axes middleware answers with lockout_response
            raise AxesBackendPermissionDenied("Too many failed logins from this address")
        return super().authenticate(request, username, password, **kwargs)


def provider_callback(request, credentials) -> bool:
    """A sign-in through the identity provider (its callback authenticates with a nonce, never a
    password): no password was guessed here, so it is neither refused by a lockout nor counted towards
    one (settings.AXES_WHITELIST_CALLABLE). Counted, a few stale callbacks from an office behind one
    address would lock everybody there out of the provider's sign-in."""
    return bool(credentials) and "nonce" in credentials and "password" not in credentials


def address_failures(request) -> int:
    """Failed logins from the request's address within the cool-off, for any username."""
    since = timezone.now() - settings.AXES_COOLOFF_TIME
    attempts = AccessAttempt.objects.filter(ip_address=client_ip(request), attempt_time__gte=since)
    return attempts.aggregate(n=Sum("failures_since_start"))["n"] or 0


def lockout_response(request, original_response=None, credentials=None):
    """The page of a refused login: 429 with Retry-After. Each refused attempt starts the cool-off
    again (django-axes' default), so the whole cool-off is the time to wait."""
    metrics.refused("login")
    cool_off = get_cool_off(request)
    seconds = max(1, round(cool_off.total_seconds())) if cool_off else None
    context = {
        "username": get_client_username(request, credentials if isinstance(credentials, dict) else None) or "",
        "minutes": max(1, round(seconds / 60)) if seconds else None,
    }
    response = render(request, "registration/locked_out.html", context, status=settings.AXES_HTTP_RESPONSE_CODE)
    if seconds:
        response["Retry-After"] = str(seconds)
    return response
