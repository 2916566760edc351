"""A mode's versions, drafts and review, and the catalog's audit trail (the admin and the API share these).

Every change of a catalog entry's fields is a new immutable ModeVersion (number 1, 2, … per mode):
`draft_save` makes a draft (not live); `version_publish` makes a version the one sessions run with:
the entry's own row (AgentMode) then holds that version's fields and `AgentMode.version` its number,
so what reads the catalog keeps working. Publishing a *superseded* version is the restore: a new
version copying it is published (nothing is rewritten; the entry's current default and active flags
stay, being catalog state).

States: draft → (publish asked under review) pending → approved | rejected → published → superseded.
With APTIX_CATALOG_REVIEW=two-person a draft is published only once someone else with the permission
"Can publish agent modes" approved it; asking to publish it before marks it pending and is refused
(CODE_NEEDS_REVIEW: the API's 409). The author never approves their own draft.

Every catalog action is a CatalogEvent row (`catalog_event_record`).
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Max
from django.utils import timezone

from .models import AgentMode, CatalogEvent, ModeVersion
from .services import catalog_event_record, mode_save, mode_teams_check
from .versioning import CATALOG_STATE_FIELDS, FIELD_NAMES, VERSIONED_FIELDS, mode_with_snapshot, snapshot_of

PERM_CURATE = "modes.change_agentmode"
PERM_PUBLISH = "modes.publish_agentmode"
REVIEW_TWO_PERSON = "two-person"

CODE_FORBIDDEN = "catalog_forbidden"  # 403
CODE_NEEDS_REVIEW = "catalog_needs_review"  # 409
CODE_STATE = "catalog_state"  # 409
CODE_NOT_FOUND = "catalog_not_found"  # 404

ERROR_NO_PUBLISH = "Publishing needs the permission “Can publish agent modes”."
ERROR_NO_CURATE = "Changing the catalog needs the permission to change agent modes."
ERROR_NEEDS_REVIEW = (
    "Two-person review is on: version {n} is published only after another curator with the permission "
    "“Can publish agent modes” approves it. It is now waiting for review."
)
ERROR_OWN_DRAFT = "The author of a version cannot approve it; another curator has to."
Action = CatalogEvent.Action
State = ModeVersion.State
# A version that was never live: a "Try it" session runs on it (once published, the session runs on
# the published entry like any other).
UNPUBLISHED = (State.DRAFT, State.PENDING, State.APPROVED, State.REJECTED)


def review_required() -> bool:
    return settings.APTIX_CATALOG_REVIEW == REVIEW_TWO_PERSON


def can_publish(user: Any) -> bool:
    return user is None or user.has_perm(PERM_PUBLISH)


def can_curate(user: Any) -> bool:
    return user is None or user.has_perm(PERM_CURATE)


def publishes_at_once(user: Any) -> bool:
    """Whether a save by `user` is published at once (else it is a draft)."""
    return can_publish(user) and not review_required()


def _refuse(message: str, code: str) -> ValidationError:
    return ValidationError(message, code=code)


def mode_get(mode: AgentMode | str) -> AgentMode:
    if isinstance(mode, AgentMode):
        return mode
    found = AgentMode.objects.filter(key=mode).first()
    if found is None:
        raise _refuse(f"No mode with key '{mode}'.", CODE_NOT_FOUND)
    return found


def version_get(mode: AgentMode | str, number: int) -> ModeVersion:
    version = ModeVersion.objects.select_related("mode").filter(mode=mode_get(mode), number=number).first()
    if version is None:
        raise _refuse(f"Mode '{mode_get(mode).key}' has no version {number}.", CODE_NOT_FOUND)
    return version


def versions_of(mode: AgentMode | str) -> list[ModeVersion]:
    return list(ModeVersion.objects.filter(mode=mode_get(mode)).select_related("author", "reviewer"))


def published_version(mode: AgentMode) -> ModeVersion | None:
    return ModeVersion.objects.filter(mode=mode, state=State.PUBLISHED).first()


def _next_number(mode: AgentMode) -> int:
    """After every version the mode has, and after its row's number (a row written without versions,
    e.g. created directly, counts as its version)."""
    highest = ModeVersion.objects.filter(mode=mode).aggregate(m=Max("number"))["m"] or 0
    return max(highest, mode.version or 0) + 1


def _check_teams(slugs: Any) -> list[str]:
    from aptix.models import Team

    if not isinstance(slugs, list) or not all(isinstance(s, str) for s in slugs):
        raise ValidationError({"teams": "teams must be a list of team slugs (empty: every team)."})
    found = set(Team.objects.filter(slug__in=slugs).values_list("slug", flat=True))
    if unknown := sorted(set(slugs) - found):
        raise ValidationError({"teams": f"Unknown team '{unknown[0]}'."})
    return sorted(set(slugs))


def _validated(mode: AgentMode, snapshot: dict[str, Any]) -> dict[str, Any]:
    """The snapshot, checked as the entry would be (AgentMode's validators and rules); ValidationError
    naming the field otherwise."""
    snapshot["teams"] = _check_teams(snapshot.get("teams", []))
    candidate = mode_with_snapshot(mode, snapshot)
    hands_default_on = mode.is_default and not candidate.is_default
    if hands_default_on:
        # A draft may hand the default on (an import moving it to another mode): there is always a
        # default because publishing keeps it here until another mode has taken it (`_apply`).
        candidate.is_default = True
    candidate.full_clean(validate_unique=False, validate_constraints=False)
    mode_teams_check(is_default=candidate.is_default, teams=snapshot["teams"])  # the default is for every team
    return {
        **snapshot_of_fields(candidate),
        "is_default": candidate.is_default and not hands_default_on,
        "teams": snapshot["teams"],
    }


def snapshot_of_fields(mode: AgentMode) -> dict[str, Any]:
    return {name: getattr(mode, name) for name in VERSIONED_FIELDS if name != "teams"}


@transaction.atomic
def draft_save(*, mode: AgentMode | str, fields: dict[str, Any], author: Any, note: str = "") -> ModeVersion:
    """A new draft of `mode`: its published fields with `fields` (AgentMode field names, those of
    VERSIONED_FIELDS) changed. Nothing live changes."""
    if not can_curate(author):
        raise _refuse(ERROR_NO_CURATE, CODE_FORBIDDEN)
    row = AgentMode.objects.select_for_update().get(pk=mode_get(mode).pk)
    if unknown := sorted(set(fields) - set(VERSIONED_FIELDS)):
        raise ValidationError({unknown[0]: f"Unknown field '{FIELD_NAMES.get(unknown[0], unknown[0])}'."})
    snapshot = _validated(row, {**snapshot_of(row), **fields})
    version = ModeVersion.objects.create(
        mode=row, number=_next_number(row), state=State.DRAFT, snapshot=snapshot, note=note or "", author=author
    )
    catalog_event_record(action=Action.DRAFT_SAVED, mode_key=row.key, user=author, version=version.number, note=note)
    return version


def _apply(row: AgentMode, version: ModeVersion, by: Any) -> None:
    """Make `version` the published one: the row takes its fields and number; the previous one is superseded."""
    before = {name: getattr(row, name) for name in CATALOG_STATE_FIELDS}
    ModeVersion.objects.filter(mode=row, state=State.PUBLISHED).exclude(pk=version.pk).update(state=State.SUPERSEDED)
    snapshot = dict(version.snapshot)
    if row.is_default and not snapshot.get("is_default"):
        snapshot["is_default"] = True  # there is always a default: another mode has to be made it
    updated = mode_with_snapshot(row, snapshot)
    updated.version = version.number
    mode_save(mode=updated)
    from aptix.models import Team

    updated.teams.set(Team.objects.filter(slug__in=snapshot.get("teams") or []))
    version.state = State.PUBLISHED
    version.published_at = timezone.now()
    version.save(update_fields=["state", "published_at"])
    if updated.is_default and not before["is_default"]:
        catalog_event_record(action=Action.DEFAULT_CHANGED, mode_key=row.key, user=by, version=version.number)
    if updated.is_active != before["is_active"]:
        action = Action.ACTIVATED if updated.is_active else Action.DEACTIVATED
        catalog_event_record(action=action, mode_key=row.key, user=by, version=version.number)


def version_publish(*, version: ModeVersion, by: Any, note: str = "") -> ModeVersion:
    """Publish `version` (a draft, or an approved one under review); a superseded one is restored as a
    new version, which is returned. ValidationError with CODE_FORBIDDEN / CODE_NEEDS_REVIEW (the
    version is then marked pending, and stays so) / CODE_STATE."""
    if not can_publish(by):
        raise _refuse(ERROR_NO_PUBLISH, CODE_FORBIDDEN)
    with transaction.atomic():
        published = _publish_locked(version, by, note)
    if published is None:  # refused after its own transaction kept the "waiting for review" mark
        raise _refuse(ERROR_NEEDS_REVIEW.format(n=version.number), CODE_NEEDS_REVIEW)
    return published


def _publish_locked(version: ModeVersion, by: Any, note: str) -> ModeVersion | None:
    row = AgentMode.objects.select_for_update().get(pk=version.mode_id)
    version = ModeVersion.objects.select_for_update().get(pk=version.pk)
    if version.state == State.PUBLISHED:
        return version
    if version.state == State.SUPERSEDED:
        return _restore(row, version, by, note)
    if version.state == State.REJECTED:
        raise _refuse(f"Version {version.number} was rejected; save a new draft to change the mode.", CODE_STATE)
    if review_required() and version.state != State.APPROVED:
        if version.state != State.PENDING:
            version.state = State.PENDING
            version.save(update_fields=["state"])
            catalog_event_record(action=Action.SUBMITTED, mode_key=row.key, user=by, version=version.number)
        return None
    _apply(row, version, by)
    catalog_event_record(action=Action.PUBLISHED, mode_key=row.key, user=by, version=version.number, note=note)
    return version


def _restore(row: AgentMode, version: ModeVersion, by: Any, note: str) -> ModeVersion:
    """A new version copying a superseded one, published (the entry's default and active flags stay)."""
    snapshot = {**version.snapshot, **{name: getattr(row, name) for name in CATALOG_STATE_FIELDS}}
    restored = ModeVersion.objects.create(
        mode=row,
        number=_next_number(row),
        state=State.DRAFT,
        snapshot=snapshot,
        note=note or f"Restored version {version.number}",
        author=by,
        restored_from=version.number,
    )
    _apply(row, restored, by)
    catalog_event_record(
        action=Action.RESTORED,
        mode_key=row.key,
        user=by,
        version=restored.number,
        note=f"version {version.number} restored as version {restored.number}",
    )
    return restored


def _state_error(version: ModeVersion, verb: str) -> str:
    return f"Version {version.number} is {version.get_state_display().lower()}: nothing to {verb}."


@transaction.atomic
def version_approve(*, version: ModeVersion, by: Any, comment: str = "") -> ModeVersion:
    if not can_publish(by):
        raise _refuse(ERROR_NO_PUBLISH, CODE_FORBIDDEN)
    version = ModeVersion.objects.select_for_update().select_related("mode").get(pk=version.pk)
    if by is not None and version.author_id == by.pk:
        raise _refuse(ERROR_OWN_DRAFT, CODE_FORBIDDEN)
    if version.state not in (State.DRAFT, State.PENDING):
        raise _refuse(
            f"Version {version.number} is {version.get_state_display().lower()}: nothing to approve.", CODE_STATE
        )
    version.state, version.reviewer, version.review_comment = State.APPROVED, by, comment or ""
    version.reviewed_at = timezone.now()
    version.save(update_fields=["state", "reviewer", "review_comment", "reviewed_at"])
    catalog_event_record(
        action=Action.APPROVED, mode_key=version.mode.key, user=by, version=version.number, note=comment
    )
    return version


@transaction.atomic
def version_reject(*, version: ModeVersion, by: Any, comment: str = "") -> ModeVersion:
    if not can_publish(by):
        raise _refuse(ERROR_NO_PUBLISH, CODE_FORBIDDEN)
    version = ModeVersion.objects.select_for_update().select_related("mode").get(pk=version.pk)
    if version.state not in (State.DRAFT, State.PENDING, State.APPROVED):
        raise _refuse(
            f"Version {version.number} is {version.get_state_display().lower()}: nothing to reject.", CODE_STATE
        )
    version.state, version.reviewer, version.review_comment = State.REJECTED, by, comment or ""
    version.reviewed_at = timezone.now()
    version.save(update_fields=["state", "reviewer", "review_comment", "reviewed_at"])
    catalog_event_record(
        action=Action.REJECTED, mode_key=version.mode.key, user=by, version=version.number, note=comment
    )
    return version


@transaction.atomic
def mode_create(
    *, mode: AgentMode, by: Any, note: str = "", teams: list[str] | None = None, publish: bool = True
) -> ModeVersion:
    """A new catalog entry and its version 1: published at once when `by` may and `publish` (an
    import without --publish passes False), else a draft of an entry that stays inactive (and not the
    default) until it is published."""
    if not can_curate(by):
        raise _refuse(ERROR_NO_CURATE, CODE_FORBIDDEN)
    at_once = publish and publishes_at_once(by)
    slugs = _check_teams(list(teams or []))
    wanted = snapshot_of_fields(mode)
    if at_once:
        mode.version = 1
    else:  # not in the catalog until a publisher publishes version 1
        mode.is_active, mode.is_default, mode.version = False, False, 0
    mode_save(mode=mode)
    if at_once:
        from aptix.models import Team

        mode.teams.set(Team.objects.filter(slug__in=slugs))
        wanted = snapshot_of_fields(mode)
    version = ModeVersion.objects.create(
        mode=mode,
        number=1,
        state=State.PUBLISHED if at_once else State.DRAFT,
        snapshot={**wanted, "teams": slugs},
        note=note or "Created",
        author=by,
        published_at=timezone.now() if at_once else None,
    )
    action = Action.PUBLISHED if at_once else Action.DRAFT_SAVED
    catalog_event_record(action=action, mode_key=mode.key, user=by, version=1, note=note or "created")
    return version


def mode_save_versioned(
    *, mode: AgentMode, fields: dict[str, Any], by: Any, note: str = "", publish: bool = True
) -> ModeVersion:
    """An edit of an entry (the admin's Save): a draft, published at once when `by` may publish, review
    is off and `publish` (the admin's "Save as draft" passes False)."""
    draft = draft_save(mode=mode, fields=fields, author=by, note=note)
    if publish and publishes_at_once(by):
        return version_publish(version=draft, by=by, note=note)
    return draft


def draft_label(version_id: int | None, mode_key: str) -> str:
    """ "draft vN" for a session trying a draft of its mode (AgentSession.mode_draft); else ""."""
    if version_id is None:
        return ""
    version = (
        ModeVersion.objects.filter(pk=version_id, mode__key=mode_key, state__in=UNPUBLISHED).only("number").first()
    )
    return f"draft v{version.number}" if version is not None else ""
