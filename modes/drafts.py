"""The catalog with its drafts applied: what the catalog would be if every pending edit were published.

A mode's *draft*, here, is its latest version that is not live yet and not refused — in state draft,
pending or approved, never rejected — and newer than its published one (`AgentMode.version`). A mode
created without publishing (modes/versions.py `mode_create`) has a row that stays inactive and version
0: its version 1 is its draft, so with drafts applied it is in the catalog when that draft says active.

Applying a draft replaces every field of VERSIONED_FIELDS by the draft's snapshot, its teams included
(`snapshot["teams"]`: slugs; empty: every team). Nothing here writes: the modes returned for drafted
entries are unsaved copies (modes/versioning.py `mode_with_snapshot`), never to be saved.

Who reads it: modes/catalog.py, when `catalog_drafts_applied` is set (a catalog test's session over the
drafts: agents/run/reasoner.py sets it per run from `AgentSession.catalog_drafts`), and
agents/run/loading.py for the turn's own mode.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from .models import AgentMode, ModeVersion
from .versioning import mode_with_snapshot

State = ModeVersion.State
# The states of a version that publishing would make live (a rejected one never is).
DRAFT_STATES = (State.DRAFT, State.PENDING, State.APPROVED)


def catalog_drafts() -> dict[str, ModeVersion]:
    """Each mode's draft (its latest draft, pending or approved version newer than its published one),
    by mode key, in the catalog's key order. One query."""
    found: dict[str, ModeVersion] = {}
    versions = ModeVersion.objects.filter(state__in=DRAFT_STATES).select_related("mode")
    for version in versions.order_by("mode__key", "-number"):
        if version.mode.key not in found and version.number > (version.mode.version or 0):
            found[version.mode.key] = version
    return found


def catalog_draft_of(mode: AgentMode) -> ModeVersion | None:
    """`mode`'s draft, as catalog_drafts() would give it (None: nothing newer than its published version)."""
    return (
        ModeVersion.objects.filter(mode=mode, state__in=DRAFT_STATES, number__gt=mode.version or 0)
        .order_by("-number")
        .first()
    )


@dataclass(frozen=True)
class DraftedEntry:
    """One entry of the catalog with drafts applied: the mode (an unsaved copy when `draft` is set), the
    ids of the teams it is for (empty: every team) and the draft applied, if any."""

    mode: AgentMode
    team_ids: frozenset[Any]
    draft: ModeVersion | None = None


def catalog_with_drafts() -> list[DraftedEntry]:
    """Every catalog entry (active or not) with its draft applied, in the catalog's order (the drafts'
    own `ordering` and names). Exactly one is the default: a draft that makes its mode the default wins
    over the published default (publishing it would unset the other); a draft that hands the default on
    to no one leaves it where it is (as publishing does: modes/versions.py `_apply`)."""
    from aptix.models import Team

    drafts = {version.mode_id: version for version in catalog_drafts().values()}
    slugs = {slug for version in drafts.values() for slug in version.snapshot.get("teams") or []}
    team_ids = dict(Team.objects.filter(slug__in=slugs).values_list("slug", "id")) if slugs else {}
    entries: list[DraftedEntry] = []
    for mode in AgentMode.objects.prefetch_related("teams"):
        draft = drafts.get(mode.pk)
        if draft is None:
            entries.append(DraftedEntry(mode=mode, team_ids=frozenset(team.pk for team in mode.teams.all())))
            continue
        wanted = draft.snapshot.get("teams") or []
        entries.append(
            DraftedEntry(
                mode=mode_with_snapshot(mode, draft.snapshot),
                team_ids=frozenset(team_ids[slug] for slug in wanted if slug in team_ids),
                draft=draft,
            )
        )
    entries = _one_default(entries)
    return sorted(entries, key=lambda entry: (entry.mode.ordering, entry.mode.display_name))


def _one_default(entries: list[DraftedEntry]) -> list[DraftedEntry]:
    defaults = [entry for entry in entries if entry.mode.is_default]
    keep: DraftedEntry | None
    if defaults:
        keep = next((e for e in defaults if e.draft is not None and not _was_default(e)), defaults[0])
    else:  # the default's draft handed it on to no one: it stays where it is
        keep = next((e for e in entries if _was_default(e)), None)
    return [_with_default(entry, entry is keep) for entry in entries]


def _with_default(entry: DraftedEntry, is_default: bool) -> DraftedEntry:
    if entry.mode.is_default == is_default:
        return entry
    mode = entry.mode if entry.draft is not None else mode_with_snapshot(entry.mode, {})  # never the row itself
    mode.is_default = is_default
    return replace(entry, mode=mode)


def _was_default(entry: DraftedEntry) -> bool:
    """Whether the entry's published row is the default (a drafted copy keeps the row's pk)."""
    return entry.draft is not None and entry.draft.mode.is_default


def usable_with_drafts(entry: DraftedEntry, team_id: Any) -> bool:
    """Whether a team (its id; None: no team at all) may use the entry: it is for every team, or for it."""
    return not entry.team_ids or (team_id is not None and team_id in entry.team_ids)
