"""API token services: create (the secret is shown once) and authenticate a bearer header."""

from __future__ import annotations

import hashlib
import secrets

from django.db.models import QuerySet
from django.utils import timezone

from .models import ApiToken


def _digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def api_token_create(*, user, name: str = "") -> tuple[ApiToken, str]:
    """Create a token for `user`; returns the row and the secret (never stored, shown once)."""
    secret = ApiToken.PREFIX + secrets.token_urlsafe(32)
    token = ApiToken.objects.create(user=user, name=name, key_prefix=secret[:10], key_hash=_digest(secret))
    return token, secret


def api_token_list(*, user) -> QuerySet[ApiToken]:
    """The user's own tokens, newest first."""
    return ApiToken.objects.filter(user=user).order_by("-created_at", "-pk")


def api_token_revoke(*, user, token_id: int) -> bool:
    """Delete the user's token `token_id`; False when they have no such token (someone else's included)."""
    deleted, _ = ApiToken.objects.filter(user=user, pk=token_id).delete()
    return deleted > 0


def api_token_user(authorization: str | None):
    """The active user for an `Authorization: Bearer <token>` header, or None."""
    if not authorization:
        return None
    scheme, _, secret = authorization.partition(" ")
    secret = secret.strip()
    if scheme.lower() != "bearer" or not secret.startswith(ApiToken.PREFIX):
        return None
    token = ApiToken.objects.select_related("user").filter(key_hash=_digest(secret)).first()
    if token is None or not token.user.is_active:
        return None
    ApiToken.objects.filter(pk=token.pk).update(last_used_at=timezone.now())
    return token.user
