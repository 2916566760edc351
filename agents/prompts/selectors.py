"""The reads of the prompt library: what a user may list and use (their own prompts and those
shared with their teams: never another team's), and who curates a team's shared prompts (its
owners, and administrators who are its members)."""

from __future__ import annotations

from typing import Any

from django.db.models import Q, QuerySet

from aptix.models import Membership, Team

from ..models import SavedPrompt

ADMIN_PERMISSION = "agents.change_savedprompt"


class PromptNotFoundError(LookupError):
    """No prompt with this id that the user may see: another user's or another team's is the same."""


def prompt_is_admin(*, user: Any) -> bool:
    """Whether `user` administers the library: a superuser, or staff with the permission to change prompts."""
    return bool(user.is_superuser or (user.is_staff and user.has_perm(ADMIN_PERMISSION)))


def prompt_curated_teams(*, user: Any) -> QuerySet[Team]:
    """The teams whose shared prompts `user` curates (shares, edits, unshares, deletes): those they
    own, and every team they are a member of when they are an administrator."""
    if not getattr(user, "is_authenticated", False):
        return Team.objects.none()
    memberships = Membership.objects.filter(user=user)
    if not prompt_is_admin(user=user):
        memberships = memberships.filter(role=Membership.Role.OWNER)
    return Team.objects.filter(pk__in=memberships.values("team_id")).order_by("name")


def prompt_curated_team_ids(*, user: Any) -> set[int]:
    return set(prompt_curated_teams(user=user).values_list("pk", flat=True))


def prompt_list(*, user: Any) -> QuerySet[SavedPrompt]:
    """The prompts `user` may use: their own (not shared) and those shared with their teams."""
    if not getattr(user, "is_authenticated", False):
        return SavedPrompt.objects.none()
    teams = Membership.objects.filter(user=user).values("team_id")
    mine_or_teams = Q(user=user, team__isnull=True) | Q(team__in=teams)
    return SavedPrompt.objects.filter(mine_or_teams).select_related("team", "user").order_by("title", "created_at")


def prompt_get(*, user: Any, prompt_id: str) -> SavedPrompt:
    """One prompt `user` may use (prompt_list's), else PromptNotFoundError."""
    found = prompt_list(user=user).filter(pk=prompt_id).first()
    if found is None:
        raise PromptNotFoundError(prompt_id)
    return found


def prompt_can_edit(*, user: Any, prompt: SavedPrompt, curated: set[int] | None = None) -> bool:
    """Whether `user` may change or delete the prompt: their own, or one shared with a team they
    curate (`curated`: those teams' ids, when the caller has them already)."""
    if prompt.team_id is None:
        return prompt.user_id == user.pk
    if curated is None:
        curated = prompt_curated_team_ids(user=user)
    return prompt.team_id in curated
