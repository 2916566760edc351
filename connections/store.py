"""Services over users' credentials: read, save and delete them, each change audited. Values are
sealed here and unsealed only for the caller that sends them to the server; nothing here logs one."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.db import transaction

from .models import ConnectionEvent, Credential
from .sealing import seal, unseal

Action = ConnectionEvent.Action


def _audit(user: Any, server: str, action: str, account: str = "") -> None:
    ConnectionEvent.objects.create(
        user=user if getattr(user, "pk", None) else None,
        username=user.get_username(),
        server=server,
        action=action,
        account=account[:255],
    )


def secrets_get(*, user_id: int, server: str) -> dict[str, str]:
    """The user's named secrets for `server` (empty when none are saved)."""
    row = Credential.objects.filter(user_id=user_id, server=server, kind=Credential.Kind.SECRETS).first()
    if row is None:
        return {}
    return {str(k): str(v) for k, v in unseal(row.sealed).items()}


def secret_names(*, user_id: int, server: str) -> set[str]:
    """Which named secrets the user has saved for `server` (their names only)."""
    return set(secrets_get(user_id=user_id, server=server))


def secrets_save(*, user: Any, server: str, values: dict[str, str]) -> None:
    """Adds or replaces the named secrets in `values`; an empty value leaves the saved one as it is
    (the form is write-only: it never shows what is saved)."""
    given = {name: value for name, value in values.items() if value}
    if not given:
        return
    with transaction.atomic():
        row = (
            Credential.objects.select_for_update()
            .filter(user=user, server=server, kind=Credential.Kind.SECRETS)
            .first()
        )
        merged = ({} if row is None else unseal(row.sealed)) | given
        if row is None:
            Credential.objects.create(user=user, server=server, kind=Credential.Kind.SECRETS, sealed=seal(merged))
        else:
            row.sealed = seal(merged)
            row.save(update_fields=["sealed", "updated_at"])
        _audit(user, server, Action.SECRETS_SAVED)


def tokens_get(*, user_id: int, server: str) -> dict[str, Any] | None:
    """The user's OAuth token set for `server` (the provider's token response), or None."""
    row = Credential.objects.filter(user_id=user_id, server=server, kind=Credential.Kind.OAUTH).first()
    return None if row is None else unseal(row.sealed)


def has_tokens(*, user_id: int, server: str) -> bool:
    return Credential.objects.filter(user_id=user_id, server=server, kind=Credential.Kind.OAUTH).exists()


def tokens_save(
    *, user: Any, server: str, tokens: dict[str, Any], account: str = "", expires_at: datetime | None = None
) -> None:
    """Stores the token set; a first one (connecting) is audited, a refreshed one is not."""
    with transaction.atomic():
        row, created = Credential.objects.select_for_update().get_or_create(
            user=user, server=server, kind=Credential.Kind.OAUTH, defaults={"sealed": seal(tokens)}
        )
        if not created:
            row.sealed = seal(tokens)
            row.expires_at = expires_at
            row.account = account or row.account
            row.save(update_fields=["sealed", "expires_at", "account", "updated_at"])
        else:
            row.account, row.expires_at = account[:255], expires_at
            row.save(update_fields=["account", "expires_at"])
            _audit(user, server, Action.CONNECTED, account)


def users_with_credentials(*, server: str) -> list[int]:
    """The ids of the users who saved credentials for `server`, the latest first."""
    rows = Credential.objects.filter(server=server, user__is_active=True).order_by("-updated_at")
    return list(dict.fromkeys(rows.values_list("user_id", flat=True)))


def connections_of(*, user_id: int) -> dict[str, dict[str, Any]]:
    """Per server: {"oauth": account or None, "secrets": sorted names} of what the user has saved."""
    found: dict[str, dict[str, Any]] = {}
    for row in Credential.objects.filter(user_id=user_id).order_by("server"):
        entry = found.setdefault(row.server, {"oauth": None, "secrets": []})
        if row.kind == Credential.Kind.OAUTH:
            entry["oauth"] = row.account or ""
        else:
            entry["secrets"] = sorted(unseal(row.sealed))
    return found


def disconnect(*, user: Any, server: str, kind: str | None = None) -> bool:
    """Deletes the user's credentials for `server` (of one kind, or all); whether there were any."""
    rows = Credential.objects.filter(user=user, server=server)
    if kind is not None:
        rows = rows.filter(kind=kind)
    deleted, _ = rows.delete()
    if deleted:
        _audit(user, server, Action.DISCONNECTED)
    return bool(deleted)


def refresh_failed(*, user: Any, server: str) -> None:
    """The provider refused to refresh the token set: it is deleted, so the next call asks the user
    to connect again."""
    deleted, _ = Credential.objects.filter(user=user, server=server, kind=Credential.Kind.OAUTH).delete()
    if deleted:
        _audit(user, server, Action.REFRESH_FAILED)


def credentials_remove_for_user(user: Any) -> None:
    """Every credential of `user` deleted (deactivation), one audit row per server."""
    servers = sorted(set(Credential.objects.filter(user=user).values_list("server", flat=True)))
    if not servers:
        return
    Credential.objects.filter(user=user).delete()
    for server in servers:
        _audit(user, server, Action.DEACTIVATED)
