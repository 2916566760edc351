from __future__ import annotations

from typing import TYPE_CHECKING

from django.conf import settings
from django.db import models
from django.utils import timezone

if TYPE_CHECKING:
    from django.contrib.auth.models import User


class Team(models.Model):
    """A team: the `org` of the records. Sessions belong to one team and one of its members."""

    name = models.CharField(max_length=120)
    slug = models.SlugField(max_length=64, unique=True)
    members: models.ManyToManyField[User, Membership] = models.ManyToManyField(
        settings.AUTH_USER_MODEL, through="Membership", related_name="teams", blank=True
    )
    # Per calendar month, for the whole team (usage/quotas.py): checked before each turn starts and
    # after each model call. Empty: unlimited.
    monthly_token_quota = models.PositiveBigIntegerField(
        null=True, blank=True, help_text="Tokens the team may use per calendar month. Empty: unlimited."
    )
    monthly_cost_quota = models.DecimalField(
        max_digits=14,
        decimal_places=2,
        null=True,
        blank=True,
        help_text="Cost (at the models.json prices) the team may spend per calendar month. Empty: unlimited.",
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class Membership(models.Model):
    class Role(models.TextChoices):
        OWNER = "owner", "Owner"
        MEMBER = "member", "Member"

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="memberships")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships")
    role = models.CharField(max_length=16, choices=Role.choices, default=Role.MEMBER)
    # This member's own monthly limits in the team: they replace the team's quota for this member's
    # turns (a higher or lower allowance for one person); empty: the team's quota applies.
    monthly_token_quota = models.PositiveBigIntegerField(
        null=True, blank=True, help_text="This member's tokens per calendar month, instead of the team's quota."
    )
    monthly_cost_quota = models.DecimalField(
        max_digits=14,
        decimal_places=2,
        null=True,
        blank=True,
        help_text="This member's cost per calendar month, instead of the team's quota.",
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["team", "user"], name="membership_unique_team_user"),
        ]

    def __str__(self) -> str:
        return f"{self.user} in {self.team} ({self.role})"


class ApiToken(models.Model):
    """A per-user bearer token for programs: the JSON API, the MCP server, the A2A agent. Only a SHA-256
    of the secret is stored. A token can be limited to some of those interfaces and to chosen modes
    (empty lists: no limit); aptix/bearer.py and the turn's services (agents/web/api.py) enforce them."""

    PREFIX = "apx_"

    class Interface(models.TextChoices):
        API = "api", "JSON API"
        MCP = "mcp", "MCP server"
        A2A = "a2a", "A2A agent"

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens")
    name = models.CharField(max_length=100, blank=True)
    key_prefix = models.CharField(max_length=12, editable=False, help_text="First characters, to recognise it.")
    key_hash = models.CharField(max_length=64, unique=True, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True, editable=False)
    interfaces = models.JSONField(
        default=list, blank=True, help_text="Where the token works (api, mcp, a2a); empty: everywhere."
    )
    modes = models.JSONField(
        default=list, blank=True, help_text="The mode keys the token may use; empty: every mode of its user's."
    )

    class Meta:
        verbose_name = "API token"

    def __str__(self) -> str:
        return f"{self.key_prefix}… ({self.user})"

    def allows(self, interface: str) -> bool:
        return not self.interfaces or interface in self.interfaces

    def allows_mode(self, key: str) -> bool:
        return not self.modes or key in self.modes


class UserPreferences(models.Model):
    """A user's settings page (/settings/): new-session defaults, theme, turn and inbox notifications. A user
    without a row has the defaults (aptix.preferences.preferences_get does not write)."""

    class Theme(models.TextChoices):
        SYSTEM = "system", "System"
        LIGHT = "light", "Light"
        DARK = "dark", "Dark"

    class Execution(models.TextChoices):  # agents.models.Execution's values: aptix may not import agents
        ASK = "ask", "Ask"
        AGENT = "agent", "Agent"

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="preferences")
    default_mode = models.CharField(max_length=64, blank=True, help_text="A mode key; blank: the catalog's default.")
    default_execution = models.CharField(max_length=8, choices=Execution.choices, default=Execution.ASK)
    theme = models.CharField(max_length=8, choices=Theme.choices, default=Theme.SYSTEM)
    notify_turns = models.BooleanField(
        default=False, help_text="A browser notification when a turn finishes while its tab is hidden."
    )
    notify_inbox = models.BooleanField(
        default=False, help_text="A browser notification when something new waits in the inbox (automations)."
    )
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name = "user preferences"
        verbose_name_plural = "user preferences"

    def __str__(self) -> str:
        return f"Preferences of {self.user}"


class Invite(models.Model):
    """A one-time link that lets someone set a password and become a member of a team (aptix/invites.py).
    Only a SHA-256 of the link's secret is stored; the link is shown to the inviter and e-mailed once."""

    email = models.EmailField(max_length=150)  # it becomes the username, which holds at most 150
    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="invites")
    role = models.CharField(max_length=16, choices=Membership.Role.choices, default=Membership.Role.MEMBER)
    token_hash = models.CharField(max_length=64, unique=True, editable=False)
    invited_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="invites_sent"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField()
    accepted_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)  # withdrawn by an inviter: its link says so
    # the account the invite created (kept when the account is deleted later: the invite stays used)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.email} to {self.team} ({self.role})"

    @property
    def expired(self) -> bool:
        return self.expires_at <= timezone.now()
