"""Accounts from a provider's verified claims: found by issuer and `sub` (never by e-mail alone),
created at the first sign-in, their name and e-mail kept as the provider says, and the teams, roles
and staff groups the group rules give set again at every sign-in."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.db import transaction
from django.utils import timezone
from django.utils.text import slugify

from aptix.models import Membership

from .models import ExternalIdentity, GroupRule

logger = logging.getLogger("aptix.identity")

EMAIL_TAKEN = (
    "An Aptix account with the e-mail address {email} already exists, and it is not linked to your {provider} "
    "sign-in. Aptix does not join accounts by e-mail address alone: ask an administrator to link them "
    "(Admin → Provider identities)."
)
DEACTIVATED = "Your Aptix account is deactivated. Ask an administrator if you need it again."
NO_SUBJECT = "{provider} did not say who you are (no sub claim)."


class SignInRefused(Exception):
    """The provider vouched for someone Aptix will not sign in; the message is for them."""


@dataclass(frozen=True)
class Grants:
    """What the group rules give a set of claim values: team → role, staff groups."""

    teams: dict[int, str]
    groups: set[int]


def claim_values(claims: Mapping[str, Any], name: str) -> list[str]:
    """The claim's values as strings: a list (Keycloak, Entra ID, Authentik) or a single value (say `hd`)."""
    value = claims.get(name)
    if isinstance(value, str):
        return [value]
    if isinstance(value, list | tuple):
        return [str(item) for item in value if isinstance(item, str | int)]
    return []


def grants_for(values: list[str]) -> Grants:
    teams: dict[int, str] = {}
    groups: set[int] = set()
    for rule in GroupRule.objects.filter(claim_value__in=values):
        if rule.team_id is not None:
            if teams.get(rule.team_id) != Membership.Role.OWNER:  # of two rules for one team, owner wins
                teams[rule.team_id] = rule.role
        elif rule.group_id is not None:
            groups.add(rule.group_id)
    return Grants(teams, groups)


def _unique_username(claims: Mapping[str, Any], subject: str) -> str:
    User = get_user_model()
    base = str(claims.get("preferred_username") or str(claims.get("email") or "").split("@")[0] or "user")
    base = slugify(base)[:120] or "user"
    candidate, n = base, 1
    while User.objects.filter(username=candidate).exists():
        n += 1
        candidate = f"{base}-{n}"
    return candidate


def _names(claims: Mapping[str, Any]) -> tuple[str, str]:
    first, last = str(claims.get("given_name") or ""), str(claims.get("family_name") or "")
    if not (first or last) and claims.get("name"):
        first, _, last = str(claims["name"]).partition(" ")
    return first[:150], last[:150]


def _identity_for(issuer: str, subject: str, claims: Mapping[str, Any], provider_name: str) -> ExternalIdentity:
    """The identity of (issuer, sub): known, an admin's pending link claimed, or new with its user."""
    identity = (
        ExternalIdentity.objects.select_for_update()
        .select_related("user")
        .filter(issuer=issuer, subject=subject)
        .first()
    )
    if identity is not None:
        return identity
    User = get_user_model()
    email = str(claims.get("email") or "").strip()
    # An e-mail match links only where the deployment allows it and the provider vouches for the
    # address explicitly: a missing `email_verified` (Entra ID sends none) would let anyone who can set
    # their e-mail at the provider take over an admin's pending link (the "nOAuth" pattern).
    if email:
        if settings.APTIX_OIDC_LINK_BY_EMAIL and claims.get("email_verified") is True:
            pending = ExternalIdentity.objects.select_related("user").filter(
                issuer=issuer, subject="", user__email__iexact=email
            )
            if len(linked := list(pending[:2])) == 1:
                identity = linked[0]
                identity.subject = subject
                identity.save(update_fields=["subject"])
                logger.info("Provider identity linked by an admin claimed", extra={"user_id": identity.user_id})
                return identity
        if User.objects.filter(email__iexact=email).exists():
            raise SignInRefused(EMAIL_TAKEN.format(email=email, provider=provider_name))
    user = User.objects.create_user(_unique_username(claims, subject), email=email)  # no usable password
    logger.info("Account created at first sign-in", extra={"user_id": user.pk})
    return ExternalIdentity.objects.create(user=user, issuer=issuer, subject=subject)


def _follow_profile(user: Any, claims: Mapping[str, Any]) -> None:
    first, last = _names(claims)
    wanted = {"first_name": first, "last_name": last, "email": _email_to_follow(user, claims)}
    changed = [field for field, value in wanted.items() if value and getattr(user, field) != value]
    for field in changed:
        setattr(user, field, wanted[field])
    if changed:
        user.save(update_fields=changed)


def _email_to_follow(user: Any, claims: Mapping[str, Any]) -> str:
    """The provider's e-mail for `user`, unless the provider says it is unverified or another account
    has it ("" then: the account keeps its own). Two accounts never share an address, so none can be
    mistaken for another's by it."""
    email = str(claims.get("email") or "").strip()
    if not email or email.lower() == (user.email or "").lower():
        return email  # no new address (its case may follow)
    if claims.get("email_verified") is False:
        return ""
    if get_user_model().objects.filter(email__iexact=email).exclude(pk=user.pk).exists():
        logger.warning(
            "The provider's new e-mail of a user is another account's: kept the old one",
            extra={"event": "identity.email_taken", "user_id": user.pk},
        )
        return ""
    return email


def grants_apply(*, identity: ExternalIdentity, grants: Grants) -> None:
    """Set the memberships, roles and staff groups the rules manage to `grants`; a membership or group
    an admin gave by hand is left as it is. A membership taken back is deleted, which closes the user's
    sockets to that team's sessions (agents/web/streams.py)."""
    user = identity.user
    managed = {m.team_id: m for m in identity.managed_memberships.all()}
    existing = {m.team_id: m for m in Membership.objects.filter(user=user)}
    for team_id, role in grants.teams.items():
        membership = existing.get(team_id)
        if membership is None:
            identity.managed_memberships.add(Membership.objects.create(team_id=team_id, user=user, role=role))
        elif team_id in managed and membership.role != role:
            membership.role = role
            membership.save(update_fields=["role"])
    for team_id, membership in managed.items():
        if team_id not in grants.teams:
            membership.delete()
    managed_groups = set(identity.managed_groups.values_list("pk", flat=True))
    held = set(user.groups.values_list("pk", flat=True))
    for group_id in grants.groups - held:
        user.groups.add(group_id)
        identity.managed_groups.add(group_id)
    for group_id in managed_groups - grants.groups:
        user.groups.remove(group_id)
        identity.managed_groups.remove(group_id)
    staff = bool(grants.groups)
    if staff and not user.is_staff:
        user.is_staff, identity.granted_staff = True, True
        user.save(update_fields=["is_staff"])
    elif not staff and identity.granted_staff:
        user.is_staff, identity.granted_staff = False, False
        user.save(update_fields=["is_staff"])


def account_sign_in(*, issuer: str, claims: Mapping[str, Any], provider_name: str | None = None) -> Any:
    """The user the provider's verified `claims` sign in (created at the first sign-in), with their profile
    and grants updated; SignInRefused with a message for them otherwise."""
    provider_name = provider_name or settings.APTIX_OIDC_NAME
    subject = str(claims.get("sub") or "")
    if not subject:
        raise SignInRefused(NO_SUBJECT.format(provider=provider_name))
    with transaction.atomic():
        identity = _identity_for(issuer, subject, claims, provider_name)
        user = identity.user
        if not user.is_active:
            raise SignInRefused(DEACTIVATED)
        _follow_profile(user, claims)
        grants_apply(identity=identity, grants=grants_for(claim_values(claims, settings.APTIX_OIDC_GROUPS_CLAIM)))
        identity.last_sign_in_at = timezone.now()
        identity.save(update_fields=["last_sign_in_at", "granted_staff"])
    return user


def staff_groups() -> list[Group]:
    """The groups a rule may give (the permission groups the catalog's migrations create)."""
    return list(Group.objects.filter(name__in=["Catalog curators", "Auditors"]))
