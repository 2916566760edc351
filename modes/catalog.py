"""The mode catalog service (TUL-010 §2): summaries of the active modes for tools and UI.

Team catalogs: a mode with no teams is for every team, a mode with teams only for those. Everything
that reads the catalog for a user reads it for a team — `modes_for_team(team)`, `mode_validate(mode,
team=team)`, `default_mode_for_team(team)`, `catalog_service.get_modes_for_team(team)` — and a mode the
team cannot use is refused exactly as an unknown one is (the same message, listing only the team's
modes). `active_modes()` and `mode_validate(mode)` without a team are the whole catalog: for the
admin, metrics and system code only.

A full fetch per call is what TUL-010 §4.4 allows, and the catalog is tens of rows: reading it
every time means an admin edit is visible on the very next call, in every process, with no cache
to invalidate.

Drafts: under `catalog_drafts_applied` (set by a run of a session over the catalog with its drafts
applied, `AgentSession.catalog_drafts`, or by `drafts_applied()`), every function here reads the
catalog as publishing every draft would make it (modes/drafts.py): the drafts' fields, active flags,
teams and default. Without it (the default) they read the published rows and nothing else.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field, replace
from typing import Any

from asgiref.sync import sync_to_async
from django.db.models import Exists, OuterRef, Q

from .drafts import catalog_with_drafts, usable_with_drafts
from .models import DEFAULT_MODE_KEY, AgentMode, TeamDefaultMode

ALL_TEAMS: Any = object()  # `team=ALL_TEAMS`: no team restriction (the admin's and system code's view)

# The team whose turn is running (set by the reasoner for its run): the built-in offline model, which
# reads the catalog itself to propose a mode, proposes only from that team's catalog.
catalog_team: ContextVar[Any] = ContextVar("aptix_catalog_team", default=ALL_TEAMS)
# Whether what reads the catalog reads it with its drafts applied (modes/drafts.py): set by the reasoner
# for a run of a session with `catalog_drafts`, and by `drafts_applied()` around a service call.
catalog_drafts_applied: ContextVar[bool] = ContextVar("aptix_catalog_drafts_applied", default=False)


@contextmanager
def drafts_applied(applied: bool = True) -> Iterator[None]:
    """Read the catalog with its drafts applied (or, `applied=False`, published) inside the block."""
    token = catalog_drafts_applied.set(bool(applied))
    try:
        yield
    finally:
        catalog_drafts_applied.reset(token)


class ModeValidationError(ValueError):
    """A mode key that is not an active catalog entry. The message names the valid keys."""


@dataclass(frozen=True)
class AgentModeSummary:
    id: str
    key: str
    display_name: str
    description: str
    system_prompt_summary: str = ""
    is_default: bool = False
    human_role_hints: list[str] = field(default_factory=list)
    example_utterances: list[str] = field(default_factory=list)

    @classmethod
    def from_model(cls, mode: AgentMode) -> AgentModeSummary:
        return cls(
            id=mode.id,
            key=mode.key,
            display_name=mode.display_name,
            description=mode.description,
            system_prompt_summary=mode.system_prompt_summary,
            is_default=mode.is_default,
            human_role_hints=list(mode.human_role_hints or []),
            example_utterances=list(mode.example_utterances or []),
        )


def normalize_mode_key(mode: object) -> str:
    """Trim and lower-case a requested mode; non-strings normalise to ""."""
    return mode.strip().lower() if isinstance(mode, str) else ""


def team_id_of(team: Any) -> Any:
    """The id of a team given as a Team, any object with an `id` (a tool context's org), or an id."""
    return getattr(team, "id", team)


def usable_by(team: Any) -> Q:
    """The catalog entries `team` may use: those for every team (no teams chosen) and those chosen for
    it. `team=None` (no team at all): only those for every team."""
    through = AgentMode.teams.through
    for_every_team = Q(~Exists(through.objects.filter(agentmode_id=OuterRef("pk"))))
    team_id = team_id_of(team)
    if team_id is None:
        return for_every_team
    return for_every_team | Q(Exists(through.objects.filter(agentmode_id=OuterRef("pk"), team_id=team_id)))


def active_modes(*, team: Any = ALL_TEAMS) -> list[AgentMode]:
    """The active catalog, in its order; with `team`, only the modes that team may use."""
    if catalog_drafts_applied.get():
        return _drafted_active(team)
    modes = AgentMode.objects.filter(is_active=True)
    if team is not ALL_TEAMS:
        modes = modes.filter(usable_by(team))
    return list(modes.order_by("ordering", "display_name"))


def _drafted_active(team: Any) -> list[AgentMode]:
    """active_modes() over the catalog with its drafts applied."""
    entries = [entry for entry in catalog_with_drafts() if entry.mode.is_active]
    if team is not ALL_TEAMS:
        team_id = team_id_of(team)
        entries = [entry for entry in entries if usable_with_drafts(entry, team_id)]
    return [entry.mode for entry in entries]


def modes_for_team(team: Any) -> list[AgentMode]:
    """The active modes `team` may use (its catalog): the picker, the badge, the tools and the API."""
    return active_modes(team=team)


def modes_for_teams(teams: Any) -> list[AgentMode]:
    """The active modes any of `teams` may use (a user's teams: their Settings' default-mode choices and
    the sidebar's filter), in the catalog's order."""
    if catalog_drafts_applied.get():
        ids = {team_id_of(team) for team in teams}
        entries = [entry for entry in catalog_with_drafts() if entry.mode.is_active]
        return [entry.mode for entry in entries if any(usable_with_drafts(entry, team_id) for team_id in ids)]
    condition = Q(pk__in=[])
    for team in teams:
        condition |= usable_by(team)
    return list(AgentMode.objects.filter(is_active=True).filter(condition).order_by("ordering", "display_name"))


def team_catalogs(teams: Any) -> tuple[dict[str, str], dict[str, str]]:
    """For a composer offering several teams: each mode's key → the ids of those `teams` that may use
    it (space-separated), and each team's id → the mode its new sessions start in."""
    usable: dict[str, list[str]] = {}
    defaults: dict[str, str] = {}
    for team in teams:
        for mode in modes_for_team(team):
            usable.setdefault(mode.key, []).append(str(team.pk))
        defaults[str(team.pk)] = default_mode_for_team(team)
    return {key: " ".join(ids) for key, ids in usable.items()}, defaults


def mode_usable(key: str, team: Any) -> bool:
    """Whether `key` is an active mode `team` may use."""
    if catalog_drafts_applied.get():
        return any(mode.key == normalize_mode_key(key) for mode in active_modes(team=team))
    return AgentMode.objects.filter(key=normalize_mode_key(key), is_active=True).filter(usable_by(team)).exists()


def default_mode_key() -> str:
    """The catalog's default mode (for every team: the admin refuses teams on it)."""
    if catalog_drafts_applied.get():
        return next((e.mode.key for e in catalog_with_drafts() if e.mode.is_default), DEFAULT_MODE_KEY)
    key = AgentMode.objects.filter(is_default=True).values_list("key", flat=True).first()
    return key or DEFAULT_MODE_KEY


def team_default_choice(team: Any) -> TeamDefaultMode | None:
    """The default mode a team's owner chose (applying or not), or None."""
    team_id = team_id_of(team)
    if team_id is None:
        return None
    return TeamDefaultMode.objects.select_related("mode").filter(team_id=team_id).first()


def default_mode_for_team(team: Any) -> str:
    """The mode a new session in `team` starts in when its caller names none (AGN-011 §3.1 as Aptix
    extends it): the team's own default while it is active and still for the team, else the catalog's.
    Never a mode the team cannot use while it can use any: should the catalog's default be closed to
    the team (data written around the admin's check), its first usable mode."""
    if team is ALL_TEAMS:
        return default_mode_key()
    choice = team_default_choice(team)
    if choice is not None and mode_usable(choice.mode.key, team):
        return choice.mode.key
    catalog_default = default_mode_key()
    if mode_usable(catalog_default, team):
        return catalog_default
    usable = modes_for_team(team)
    return usable[0].key if usable else catalog_default


def mode_validate(mode: object, *, team: Any = ALL_TEAMS) -> AgentMode:
    """Return the active catalog entry for `mode` (normalised) or raise ModeValidationError. With
    `team`, a mode that team cannot use is unknown: the same message, listing the team's modes only."""
    key = normalize_mode_key(mode)
    modes = active_modes(team=team)
    for candidate in modes:
        if candidate.key == key:
            return candidate
    valid = ", ".join(m.key for m in modes) or "(none: the catalog is empty)"
    shown = mode if isinstance(mode, str) else repr(mode)
    raise ModeValidationError(f"Unknown or inactive mode '{shown}'. Valid modes: {valid}.")


class CatalogService:
    """IAgentModeCatalogService."""

    def get_all_modes_sync(self) -> list[AgentModeSummary]:
        return [AgentModeSummary.from_model(mode) for mode in active_modes()]

    async def get_all_modes(self) -> list[AgentModeSummary]:
        """The whole active catalog (TUL-010 §4): what no team restricts."""
        return await sync_to_async(self.get_all_modes_sync, thread_sensitive=True)()

    def get_modes_for_team_sync(self, team: Any) -> list[AgentModeSummary]:
        """The team's catalog; `is_default` marks the mode its new sessions start in (the team's own
        default when it set one that applies)."""
        default = default_mode_for_team(team)
        return [
            replace(AgentModeSummary.from_model(mode), is_default=mode.key == default) for mode in modes_for_team(team)
        ]

    async def get_modes_for_team(self, team: Any) -> list[AgentModeSummary]:
        """The modes `team` may use (agent_list_modes for a session of that team)."""
        return await sync_to_async(self.get_modes_for_team_sync, thread_sensitive=True)(team)


catalog_service = CatalogService()
