"""Services over what the MCP authorization flow (tools/mcp/oauth.py) keeps between its steps, in the
database so that every web process sees it: a pending authorization (the `state` sent to the
authorization server, bound to its user and server, with the PKCE verifier) from the redirect to the
callback, and the clients registered dynamically. A cache would do in one process only: with the
default local-memory cache, a callback that lands on another process than the one that started the
flow would find nothing.

The state is stored as its SHA-256 (a leaked table gives no usable state); the verifier and the client
secrets are sealed (sealing.py). A pending authorization is taken once: `authorization_take` deletes
it in the same transaction that reads it, so two callbacks with one state cannot both succeed."""

from __future__ import annotations

import hashlib
from datetime import timedelta
from typing import Any

from django.db import transaction
from django.utils import timezone

from .models import PendingAuthorization, RegisteredClient
from .sealing import seal, unseal


def _hashed(state: str) -> str:
    return hashlib.sha256(state.encode("utf-8")).hexdigest()


def authorization_save(*, state: str, user_id: int, server: str, values: dict[str, Any], seconds: int) -> None:
    """Keep a started authorization for `seconds`; the expired ones go at the same time."""
    now = timezone.now()
    PendingAuthorization.objects.filter(expires_at__lt=now).delete()
    PendingAuthorization.objects.create(
        state_hash=_hashed(state),
        user_id=user_id,
        server=server,
        sealed=seal(values),
        expires_at=now + timedelta(seconds=seconds),
    )


def authorization_server(*, state: str) -> str | None:
    """The server a live pending authorization was started for (None: unknown, used or expired)."""
    row = PendingAuthorization.objects.filter(state_hash=_hashed(state), expires_at__gte=timezone.now()).first()
    return row.server if row else None


def authorization_take(*, state: str, user_id: int, server: str) -> dict[str, Any] | None:
    """The values of `user_id`'s pending authorization of `server` with this state, which is deleted:
    one use. None when it is unknown, already used, expired, or someone else's or another server's
    (then it is left for its owner: a callback carrying another user's state must not spend it)."""
    with transaction.atomic():
        row = (
            PendingAuthorization.objects.select_for_update()
            .filter(state_hash=_hashed(state), user_id=user_id, server=server)
            .first()
        )
        if row is None:
            return None
        row.delete()
    if row.expires_at < timezone.now():
        return None
    return unseal(row.sealed)


def client_key(*parts: str) -> str:
    return hashlib.sha256("\n".join(parts).encode("utf-8")).hexdigest()


def registered_client(*, key: str) -> tuple[str, str | None] | None:
    """(client id, client secret) of the client registered under `key`, if any."""
    row = RegisteredClient.objects.filter(key=key).first()
    if row is None:
        return None
    secret = unseal(row.sealed_secret).get("secret") if row.sealed_secret else None
    return row.client_id, secret


def registered_client_save(
    *, key: str, server: str, client_id: str, client_secret: str | None
) -> tuple[str, str | None]:
    """Keep a client registered under `key`; when another process kept one first, that one wins (the
    one every process then uses)."""
    sealed = seal({"secret": client_secret}) if client_secret else ""
    row, _ = RegisteredClient.objects.get_or_create(
        key=key, defaults={"server": server, "client_id": client_id, "sealed_secret": sealed}
    )
    secret = unseal(row.sealed_secret).get("secret") if row.sealed_secret else None
    return row.client_id, secret
