"""Login lockout (django-axes): the authentication backend that refuses a locked-out login, and the
page a locked-out login gets (429 with Retry-After). Configured in settings (APTIX_LOGIN_*)."""

from __future__ import annotations

from axes.backends import AxesStandaloneBackend
from axes.helpers import get_client_username, get_cool_off
from django.conf import settings
from django.shortcuts import render


class LockoutBackend(AxesStandaloneBackend):
    """django-axes' lockout check before the ModelBackend, except for authenticate() calls made
    without a request: those come from code, not from a login form (the test client's login(), a
    management command), and django-axes cannot count them. Every login page of Aptix (/login/ and
    the admin's) passes its request, so each of them is counted and locked."""

    def authenticate(self, request, username=None, password=None, **kwargs):
        if request is None:
            return None
        return super().authenticate(request, username, password, **kwargs)


def lockout_response(request, original_response=None, credentials=None):
    """The page of a refused login: 429 with Retry-After. Each refused attempt starts the cool-off
    again (django-axes' default), so the whole cool-off is the time to wait."""
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
