"""Catalog services: the only writers of AgentMode. They keep exactly one default at all times."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction

from .models import ERROR_DEFAULT_CANNOT_BE_DELETED, AgentMode, CatalogEvent

ERROR_DEFAULT_FOR_EVERY_TEAM = (
    "The catalog's default mode is for every team: new sessions of any team may fall back to it. "
    "Leave its teams empty, or make another mode the default first."
)


@transaction.atomic
def mode_save(*, mode: AgentMode) -> AgentMode:
    """Validate and save a catalog entry. Making it the default unsets the previous default in the
    same transaction, so readers never see zero or two defaults."""
    mode.full_clean()
    if mode.is_default:
        # Lock the current default(s) first so two concurrent "make default" edits serialise.
        others = AgentMode.objects.select_for_update().filter(is_default=True).exclude(pk=mode.pk)
        for other in others:
            other.is_default = False
            other.save(update_fields=["is_default", "updated_at"])
    elif not AgentMode.objects.filter(is_default=True).exclude(pk=mode.pk).exists():
        # First entry of an empty catalog: it has to be the default.
        mode.is_default = True
    mode.save()
    return mode


def catalog_event_record(
    *, action: str, mode_key: str, user: Any = None, version: int | None = None, note: str = ""
) -> CatalogEvent:
    """One row of the catalog's audit trail (CatalogEvent.Action names the actions); the import
    command records "imported" with it."""
    return CatalogEvent.objects.create(
        action=action,
        mode_key=mode_key,
        user=user if getattr(user, "pk", None) is not None else None,
        version=version,
        note=note or "",
    )


@transaction.atomic
def mode_make_default(*, mode: AgentMode, by: Any = None) -> AgentMode:
    """A catalog action (audited): the default and active flags are the catalog's state, not a version."""
    if not mode.is_active:
        raise ValidationError("Only an active mode can be the default. Activate it first.")
    if mode.pk is not None and mode.teams.exists():
        raise ValidationError({"teams": ERROR_DEFAULT_FOR_EVERY_TEAM})
    was_default = AgentMode.objects.filter(pk=mode.pk, is_default=True).exists()
    mode.is_default = True
    mode = mode_save(mode=mode)
    if not was_default:
        catalog_event_record(
            action=CatalogEvent.Action.DEFAULT_CHANGED, mode_key=mode.key, user=by, version=mode.version
        )
    return mode


@transaction.atomic
def mode_set_active(*, mode: AgentMode, active: bool, by: Any = None) -> AgentMode:
    """Activate or deactivate a mode: a catalog action (audited). The default cannot be deactivated."""
    locked = AgentMode.objects.select_for_update().get(pk=mode.pk)
    if locked.is_active == active:
        return locked
    locked.is_active = active
    mode_save(mode=locked)
    action = CatalogEvent.Action.ACTIVATED if active else CatalogEvent.Action.DEACTIVATED
    catalog_event_record(action=action, mode_key=locked.key, user=by, version=locked.version)
    return locked


@transaction.atomic
def mode_delete(*, mode: AgentMode, by: Any = None) -> None:
    locked = AgentMode.objects.select_for_update().get(pk=mode.pk)
    if locked.is_default:
        raise ValidationError(ERROR_DEFAULT_CANNOT_BE_DELETED)
    catalog_event_record(action=CatalogEvent.Action.DELETED, mode_key=locked.key, user=by, version=locked.version)
    locked.delete()


def mode_teams_check(*, is_default: bool, teams: Any) -> None:
    """The catalog's default stays usable by every team (it is every session's last fallback): chosen
    teams on it are refused. Called by the admin form, which saves the teams after the mode."""
    if is_default and teams:
        raise ValidationError({"teams": ERROR_DEFAULT_FOR_EVERY_TEAM})
