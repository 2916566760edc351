"""Team services and selectors."""

from __future__ import annotations

from django.db import transaction
from django.db.models import QuerySet
from django.utils.text import slugify

from .models import Membership, Team


def team_list_for_user(*, user) -> QuerySet[Team]:
    if not getattr(user, "is_authenticated", False):
        return Team.objects.none()
    return Team.objects.filter(memberships__user=user).order_by("name")


def team_member_ids(*, team_id) -> list:
    """The ids of the team's members."""
    return list(Membership.objects.filter(team_id=team_id).values_list("user_id", flat=True))


@transaction.atomic
def team_ensure(*, name: str, owner=None) -> Team:
    """Return the team with this name's slug, creating it (and the owner's membership) if needed."""
    team, _ = Team.objects.get_or_create(slug=slugify(name), defaults={"name": name})
    if owner is not None:
        Membership.objects.get_or_create(team=team, user=owner, defaults={"role": Membership.Role.OWNER})
    return team
