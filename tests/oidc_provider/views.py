"""The test-only endpoints: a user with these groups (created or changed), and a new signing key."""

from __future__ import annotations

import json
from typing import Any

from django.contrib.auth.models import Group, User
from django.http import HttpRequest, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST
from oauth2_provider.settings import oauth2_settings

from .keys import new_private_key


@csrf_exempt
@require_POST
def user(request: HttpRequest) -> JsonResponse:
    body: dict[str, Any] = json.loads(request.body)
    account, _ = User.objects.get_or_create(username=body["username"])
    account.set_password(body["password"])
    account.email = body.get("email", f"{account.username}@example.com")
    account.first_name, account.last_name = body.get("first_name", ""), body.get("last_name", "")
    account.is_active = body.get("active", True)
    account.save()
    account.groups.set([Group.objects.get_or_create(name=name)[0] for name in body.get("groups", [])])
    return JsonResponse({"sub": str(account.pk)})


@csrf_exempt
@require_POST
def rotate(request: HttpRequest) -> JsonResponse:
    """A new signing key; the old one stays published (`keep_old`) or is retired at once."""
    body: dict[str, Any] = json.loads(request.body or b"{}")
    old = oauth2_settings.OIDC_RSA_PRIVATE_KEY
    oauth2_settings.OIDC_RSA_PRIVATE_KEY = new_private_key()
    oauth2_settings.OIDC_RSA_PRIVATE_KEYS_INACTIVE = [old] if body.get("keep_old") else []
    return JsonResponse({"previous": old, "current": oauth2_settings.OIDC_RSA_PRIVATE_KEY})


def key(request: HttpRequest) -> JsonResponse:
    """The current signing key (the tests sign tokens of their own with it)."""
    return JsonResponse({"pem": oauth2_settings.OIDC_RSA_PRIVATE_KEY})
