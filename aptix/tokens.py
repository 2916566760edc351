"""API token services: create (the secret is shown once) and authenticate a bearer header."""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Sequence
from datetime import timedelta
from typing import Any

from django.contrib.auth.forms import PasswordChangeForm
from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone

from .models import ApiToken


def _digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


ERROR_INTERFACES = "'interfaces' must be a list of: {choices}."
ERROR_MODES = "'modes' must be a list of mode keys."
ERROR_INTERFACE = "This API token is limited to {allowed}: it does not work for the {here}."


def api_token_create(
    *, user, name: str = "", interfaces: Sequence[str] = (), modes: Sequence[str] = ()
) -> tuple[ApiToken, str]:
    """Create a token for `user`, limited to `interfaces` (ApiToken.Interface values) and to the mode
    keys `modes` when given (the caller checks the keys against the user's catalog: this layer does
    not know modes); returns the row and the secret (never stored, shown once). A bad limit raises
    ValidationError naming it, and nothing is created."""
    interfaces, modes = api_token_limits(interfaces, modes)
    secret = ApiToken.PREFIX + secrets.token_urlsafe(32)
    token = ApiToken.objects.create(
        user=user,
        name=name,
        key_prefix=secret[:10],
        key_hash=_digest(secret),
        interfaces=interfaces,
        modes=modes,
    )
    return token, secret


def api_token_limits(interfaces: Any, modes: Any) -> tuple[list[str], list[str]]:
    """A token's limits as stored (lists without repeats), or ValidationError naming the bad one."""
    if not isinstance(interfaces, list | tuple) or any(value not in ApiToken.Interface.values for value in interfaces):
        raise ValidationError({"interfaces": ERROR_INTERFACES.format(choices=", ".join(ApiToken.Interface.values))})
    if not isinstance(modes, list | tuple) or any(not isinstance(key, str) or not key for key in modes):
        raise ValidationError({"modes": ERROR_MODES})
    return list(dict.fromkeys(interfaces)), list(dict.fromkeys(modes))


def interface_refusal(token: ApiToken | None, interface: str) -> str | None:
    """Why `token` may not be used on `interface` (an ApiToken.Interface value), or None when it may
    (a provider's access token, None here, has no such limits)."""
    if token is None or token.allows(interface):
        return None
    labels = dict(ApiToken.Interface.choices)
    allowed = " and the ".join(labels[value] for value in token.interfaces)
    return ERROR_INTERFACE.format(allowed=f"the {allowed}", here=labels[interface])


def api_token_list(*, user) -> QuerySet[ApiToken]:
    """The user's own tokens, newest first."""
    return ApiToken.objects.filter(user=user).order_by("-created_at", "-pk")


def api_token_get(*, user, token_id: int) -> ApiToken | None:
    """The user's own token `token_id`, or None (revoked, or someone else's)."""
    return ApiToken.objects.filter(user=user, pk=token_id).first()


def api_token_revoke(*, user, token_id: int) -> bool:
    """Delete the user's token `token_id`; False when they have no such token (someone else's included)."""
    deleted, _ = ApiToken.objects.filter(user=user, pk=token_id).delete()
    return deleted > 0


def api_tokens_revoke_all(*, user) -> int:
    """Delete all of `user`'s tokens (their password changed: a token is as good as the password);
    the number deleted."""
    deleted, _ = ApiToken.objects.filter(user=user).delete()
    return deleted


LAST_USED_EVERY = timedelta(minutes=1)  # how stale a token's "last used" may be
PASSWORD_CHANGED = "Your password was changed."
TOKENS_REVOKED = "Your {count} API token{s} {were} revoked with it: create new ones for your programs."


def password_change(*, form: PasswordChangeForm) -> tuple[User, str]:
    """Save a valid password change and revoke the user's API tokens in the same transaction (someone
    who learnt the old password may have made one); the user and what to tell them."""
    with transaction.atomic():
        user = form.save()
        revoked = api_tokens_revoke_all(user=user)
    if not revoked:
        return user, PASSWORD_CHANGED
    plural = revoked != 1
    return user, f"{PASSWORD_CHANGED} " + TOKENS_REVOKED.format(
        count=revoked, s="s" if plural else "", were="were" if plural else "was"
    )


def api_token_user(authorization: str | None):
    """The active user for an `Authorization: Bearer <token>` header, or None."""
    token = api_token_of(authorization)
    return token.user if token is not None else None


def api_token_of(authorization: str | None) -> ApiToken | None:
    """The token of an `Authorization: Bearer <token>` header (its user active, loaded with it), or None."""
    if not authorization:
        return None
    scheme, _, secret = authorization.partition(" ")
    secret = secret.strip()
    if scheme.lower() != "bearer" or not secret.startswith(ApiToken.PREFIX):
        return None
    token = ApiToken.objects.select_related("user").filter(key_hash=_digest(secret)).first()
    if token is None or not token.user.is_active:
        return None
    now = timezone.now()
    # Settings shows "last used 3 minutes ago": a write a minute is enough, not one per request.
    if token.last_used_at is None or now - token.last_used_at >= LAST_USED_EVERY:
        ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
    return token
