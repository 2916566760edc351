"""Who a provider's user is here (ExternalIdentity) and what their groups give them (GroupRule)."""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth.models import Group
from django.core.exceptions import ValidationError
from django.db import models
from django.db.models import Q

from aptix.models import Membership, Team


class ExternalIdentity(models.Model):
    """A user as the provider knows them: issuer and `sub`, never the e-mail. An admin links a local
    account by adding a row with an empty subject: the next sign-in whose e-mail is the user's claims it."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="external_identities")
    issuer = models.CharField(max_length=255)
    subject = models.CharField(
        max_length=255,
        blank=True,
        help_text="The provider's `sub`. Empty: the next sign-in with this user's e-mail address links to them.",
    )
    # What the group rules gave this user, so the next sign-in can take back exactly that and leave what
    # an admin gave by hand alone.
    managed_memberships = models.ManyToManyField(Membership, blank=True, related_name="+", editable=False)
    managed_groups = models.ManyToManyField(Group, blank=True, related_name="+", editable=False)
    granted_staff = models.BooleanField(default=False, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)
    last_sign_in_at = models.DateTimeField(null=True, blank=True, editable=False)

    class Meta:
        verbose_name = "provider identity"
        verbose_name_plural = "provider identities"
        constraints = [
            models.UniqueConstraint(
                fields=["issuer", "subject"], condition=~Q(subject=""), name="identity_unique_issuer_subject"
            ),
            models.UniqueConstraint(fields=["user", "issuer"], name="identity_one_per_user_and_issuer"),
        ]

    def __str__(self) -> str:
        return f"{self.user} at {self.issuer} ({self.subject or 'to be linked'})"


class GroupRule(models.Model):
    """A value of the groups claim and what it gives: a team with a role, or staff with a group
    (Catalog curators, Auditors). Applied at every sign-in."""

    claim_value = models.CharField(
        max_length=255, help_text="A value of the groups claim, exactly as the provider sends it."
    )
    team = models.ForeignKey(Team, null=True, blank=True, on_delete=models.CASCADE, related_name="group_rules")
    role = models.CharField(max_length=16, choices=Membership.Role.choices, default=Membership.Role.MEMBER)
    group = models.ForeignKey(
        Group,
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="+",
        help_text="Staff with this group's permissions (Catalog curators, Auditors) instead of a team.",
    )

    class Meta:
        ordering = ["claim_value"]
        constraints = [
            models.CheckConstraint(
                condition=Q(team__isnull=False, group__isnull=True) | Q(team__isnull=True, group__isnull=False),
                name="group_rule_team_or_group",
            ),
        ]

    def __str__(self) -> str:
        target = f"{self.team} ({self.role})" if self.team_id else f"staff, {self.group}"
        return f"{self.claim_value} → {target}"

    def clean(self) -> None:
        if (self.team_id is None) == (self.group_id is None):
            raise ValidationError("Choose a team (with a role) or a staff group, not both or neither.")
