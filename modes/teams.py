"""Team catalogs: a team's own default mode (set by its owners or an administrator) and what the
settings page shows of it. Which modes a team may use is modes.catalog's (`modes_for_team`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction

from aptix.models import Membership
from aptix.teams import team_list_for_user

from .catalog import ModeValidationError, default_mode_for_team, mode_validate, modes_for_team, team_default_choice
from .models import AgentMode, CatalogEvent, TeamDefaultMode
from .services import catalog_event_record

ERROR_NOT_TEAM_OWNER = "Only the team's owners and administrators set the team's default mode."


def team_default_mode_can_set(*, user: Any, team: Any) -> bool:
    """Whether `user` may set `team`'s default mode: an owner of the team, a superuser, or staff with
    the permission to change team default modes (administrators; Catalog curators)."""
    if not getattr(user, "is_authenticated", False):
        return False
    if user.is_superuser or (user.is_staff and user.has_perm("modes.change_teamdefaultmode")):
        return True
    return Membership.objects.filter(team=team, user=user, role=Membership.Role.OWNER).exists()


@transaction.atomic
def team_default_mode_set(*, team: Any, mode: str, user: Any) -> TeamDefaultMode | None:
    """Set `team`'s default mode to `mode` (a key the team may use: anything else is refused as an
    unknown mode, naming the team's modes), or "" for the catalog's default. PermissionDenied unless
    `user` may (team_default_mode_can_set). Returns the choice, None when it was cleared."""
    if not team_default_mode_can_set(user=user, team=team):
        raise PermissionDenied(ERROR_NOT_TEAM_OWNER)
    if not (mode or "").strip():
        cleared = TeamDefaultMode.objects.filter(team=team).select_related("mode").first()
        if cleared is not None:
            cleared.delete()
            catalog_event_record(
                action=CatalogEvent.Action.DEFAULT_CHANGED,
                mode_key=cleared.mode.key,
                user=user,
                note=f"no longer team {team.slug}'s default: the catalog's default applies",
            )
        return None
    try:
        target = mode_validate(mode, team=team)
    except ModeValidationError as exc:
        raise ValidationError({"mode": str(exc)}) from exc
    before = TeamDefaultMode.objects.filter(team=team).values_list("mode_id", flat=True).first()
    choice, _ = TeamDefaultMode.objects.update_or_create(team=team, defaults={"mode": target, "set_by": user})
    if before != target.pk:
        catalog_event_record(
            action=CatalogEvent.Action.DEFAULT_CHANGED,
            mode_key=target.key,
            user=user,
            version=target.version,
            note=f"team {team.slug}'s default",
        )
    return choice


@dataclass(frozen=True)
class TeamDefaultRow:
    """One of a user's teams on the settings page: its default mode and whether the user may set it."""

    team: Any
    can_set: bool
    chosen: str  # the key the team's owner chose ("" for none)
    applies: bool  # the choice is an active mode the team may use (else the catalog's default applies)
    default_key: str  # the mode the team's new sessions start in
    default_name: str
    modes: list[AgentMode]  # the choices: the team's active modes


def team_default_rows(*, user: Any) -> list[TeamDefaultRow]:
    """The user's teams, each with its default mode (the settings page's Teams card)."""
    rows = []
    for team in team_list_for_user(user=user):
        modes = modes_for_team(team)
        choice = team_default_choice(team)
        default = default_mode_for_team(team)
        chosen = choice.mode.key if choice is not None else ""
        rows.append(
            TeamDefaultRow(
                team=team,
                can_set=team_default_mode_can_set(user=user, team=team),
                chosen=chosen,
                applies=bool(chosen) and chosen == default,
                default_key=default,
                default_name=next((m.display_name for m in modes if m.key == default), default),
                modes=modes,
            )
        )
    return rows


def team_for_default(*, user: Any, slug: str) -> Any:
    """The user's team with this slug (None otherwise: another team's is as good as unknown)."""
    return team_list_for_user(user=user).filter(slug=slug).first()
