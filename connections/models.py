"""A user's credentials for one MCP server (Credential: sealed, see sealing.py) and the audit trail
of connecting, disconnecting and failed refreshes (ConnectionEvent)."""

from __future__ import annotations

from django.conf import settings
from django.db import models


class Credential(models.Model):
    """One user's credentials for one server: an OAuth token set (`oauth`) or the named secrets its
    `${user:NAME}` references read (`secrets`). `sealed` is Fernet ciphertext of a JSON object; no
    field, string form or admin page shows what it holds."""

    class Kind(models.TextChoices):
        OAUTH = "oauth", "OAuth tokens"
        SECRETS = "secrets", "Named secrets"

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="mcp_credentials")
    server = models.CharField(max_length=61)
    kind = models.CharField(max_length=8, choices=Kind.choices)
    sealed = models.TextField(editable=False)
    # Who the provider says the user is ("connected as …"); not a secret, shown to the user.
    account = models.CharField(max_length=255, blank=True)
    expires_at = models.DateTimeField(null=True, blank=True)  # the access token's expiry (oauth)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["user", "server", "kind"], name="credential_one_per_user_server_kind")
        ]

    def __str__(self) -> str:
        return f"{self.user_id} · {self.server} · {self.kind}"

    def __repr__(self) -> str:  # never the sealed value, even encrypted, in a traceback or log line
        return f"<Credential {self}>"


class ConnectionEvent(models.Model):
    """Who connected, disconnected, or lost a connection to which server, and when. The username is
    kept as text so the row outlives the user."""

    class Action(models.TextChoices):
        CONNECTED = "connected", "Connected"
        DISCONNECTED = "disconnected", "Disconnected"
        SECRETS_SAVED = "secrets_saved", "Secrets saved"
        REFRESH_FAILED = "refresh_failed", "Refresh failed"
        DEACTIVATED = "deactivated", "Removed: user deactivated"

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    username = models.CharField(max_length=150)
    server = models.CharField(max_length=61)
    action = models.CharField(max_length=16, choices=Action.choices)
    account = models.CharField(max_length=255, blank=True)
    at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        ordering = ["-at", "-id"]
        verbose_name = "connection event"

    def __str__(self) -> str:
        return f"{self.username} {self.action} {self.server}"


class PendingAuthorization(models.Model):
    """An authorization a user started (the MCP OAuth flow), until its callback comes back: kept in the
    database so that the callback may land on any web process. Keyed by a SHA-256 of the `state` (the
    table never holds a usable state); `sealed` holds the PKCE verifier, the redirect URI and the client
    id. Used once (the callback deletes it), and worthless after `expires_at`."""

    state_hash = models.CharField(max_length=64, primary_key=True)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    server = models.CharField(max_length=61)
    sealed = models.TextField(editable=False)
    expires_at = models.DateTimeField(db_index=True)

    def __str__(self) -> str:
        return f"{self.user_id} · {self.server}"

    def __repr__(self) -> str:  # never the sealed value in a traceback or log line
        return f"<PendingAuthorization {self}>"


class RegisteredClient(models.Model):
    """The OAuth client Aptix registered dynamically (RFC 7591) at an authorization server, for one
    server and redirect URI: registered once for every process, not once per process. The secret, when
    the authorization server issued one, is sealed."""

    key = models.CharField(max_length=64, primary_key=True)  # SHA-256 of server, issuer and redirect URI
    server = models.CharField(max_length=61)
    client_id = models.CharField(max_length=2048)
    sealed_secret = models.TextField(blank=True, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return self.server

    def __repr__(self) -> str:
        return f"<RegisteredClient {self}>"
