"""Projects' services and selectors: the only writers of `Project` and the one membership check.

Who sees a project: its members — the whole team (`whole_team`, the default) or the chosen members of
the team. Anyone else, a user of another team included, gets ProjectNotFoundError (a 404), exactly as
for an id that does not exist. Members read and write the project; changing who the members are, and
deleting the project, is for its creator and the team's owners (PermissionDenied otherwise)."""

from __future__ import annotations

from collections.abc import Iterable
from functools import partial
from typing import Any

from django.contrib.auth import get_user_model
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.db.models import Q, QuerySet

from aptix.ids import HEX_ID
from aptix.models import Membership, Team
from files.services import project_files_purge
from modes.catalog import ModeValidationError, mode_validate

from .models import Project, ProjectAudit
from .signals import project_file_removed

NAME_MAX = 120
DESCRIPTION_MAX = 2_000
INSTRUCTIONS_MAX = 20_000

ERROR_NAME_EMPTY = "Give the project a name."
ERROR_NAME_TOO_LONG = f"A project's name has at most {NAME_MAX} characters."
ERROR_NAME_TAKEN = "Your team already has a project with this name."
ERROR_DESCRIPTION_TOO_LONG = f"A project's description has at most {DESCRIPTION_MAX} characters."
ERROR_INSTRUCTIONS_TOO_LONG = f"A project's instructions have at most {INSTRUCTIONS_MAX} characters."
ERROR_NOT_TEXT = "must be text."
ERROR_MEMBER_NOT_IN_TEAM = "{who} is not a member of the project's team."
ERROR_MEMBERS_EMPTY = "Choose at least one member, or give the project to the whole team."
ERROR_NOT_IN_TEAM = "You are not a member of this team."
ERROR_MANAGE_MEMBERS = "Only the project's creator or an owner of its team can change its members."
ERROR_DELETE = "Only the project's creator or an owner of its team can delete the project."

# The value of `members` that gives the project to the whole team.
WHOLE_TEAM = None


class ProjectNotFoundError(LookupError):
    """No project with this id that this user is a member of."""


def _members_q(user: Any) -> Q:
    return Q(team__memberships__user=user) & (Q(whole_team=True) | Q(members=user))


def project_list(*, user: Any, team: Any = None) -> QuerySet[Project]:
    """The projects `user` is a member of (in teams they still belong to), by name; `team` narrows it."""
    if not getattr(user, "is_authenticated", False):
        return Project.objects.none()
    projects = Project.objects.filter(_members_q(user), archived_at__isnull=True)
    if team is not None:
        projects = projects.filter(team=team)
    return projects.select_related("team").distinct()


def project_get(*, user: Any, project_id: Any) -> Project:
    """The project if `user` is one of its members, else ProjectNotFoundError (as if none existed)."""
    if not isinstance(project_id, str) or not HEX_ID.fullmatch(project_id):
        raise ProjectNotFoundError(project_id)
    project = project_list(user=user).filter(pk=project_id).first()
    if project is None:
        raise ProjectNotFoundError(project_id)
    return project


def project_member(user: Any, project: Project) -> bool:
    """Whether `user` is a member of `project`: of its team and, unless it is the whole team's, chosen."""
    if not getattr(user, "is_authenticated", False):
        return False
    if not Membership.objects.filter(team_id=project.team_id, user=user).exists():
        return False
    return project.whole_team or project.members.filter(pk=user.pk).exists()


def project_members(*, project: Project) -> list[Any]:
    """The users who are members of the project now, by username."""
    users = get_user_model().objects.filter(memberships__team_id=project.team_id, is_active=True)
    if not project.whole_team:
        users = users.filter(projects=project)
    return list(users.distinct().order_by("username"))


def project_can_manage(*, user: Any, project: Project) -> bool:
    """Whether `user` may change the project's members or delete it: its creator or a team owner."""
    if project.created_by_id == user.pk:
        return True
    return Membership.objects.filter(team_id=project.team_id, user=user, role=Membership.Role.OWNER).exists()


def _text(field: str, value: Any, limit: int, too_long: str) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise ValidationError({field: f"'{field}' {ERROR_NOT_TEXT}"})
    value = value.strip()
    if len(value) > limit:
        raise ValidationError({field: too_long})
    return value


def _name(team: Any, value: Any, *, exclude: str | None = None) -> str:
    name = _text("name", value, NAME_MAX, ERROR_NAME_TOO_LONG)
    if not name:
        raise ValidationError({"name": ERROR_NAME_EMPTY})
    taken = Project.objects.filter(team=team, name__iexact=name)
    if exclude:
        taken = taken.exclude(pk=exclude)
    if taken.exists():
        raise ValidationError({"name": ERROR_NAME_TAKEN})
    return name


def _default_mode(team: Any, value: Any) -> str:
    if value is None or (isinstance(value, str) and not value.strip()):
        return ""
    try:
        return mode_validate(value, team=team).key
    except ModeValidationError as exc:
        raise ValidationError({"default_mode": str(exc)}) from exc


def _chosen_members(team: Any, members: Iterable[Any]) -> list[Any]:
    """The users `members` names (user objects, ids or usernames), each a member of `team`."""
    if isinstance(members, str | bytes) or not isinstance(members, Iterable):
        raise ValidationError({"members": "'members' must be a list of usernames, or null for the whole team."})
    users = []
    in_team = get_user_model().objects.filter(memberships__team=team)
    for who in members:
        if hasattr(who, "pk"):
            found = in_team.filter(pk=who.pk).first()
        elif isinstance(who, int) and not isinstance(who, bool):
            found = in_team.filter(pk=who).first()
        elif isinstance(who, str) and who.strip():
            found = in_team.filter(username=who.strip()).first()
        else:
            raise ValidationError({"members": "'members' must be a list of usernames, or null for the whole team."})
        if found is None:
            raise ValidationError({"members": ERROR_MEMBER_NOT_IN_TEAM.format(who=repr(getattr(who, "username", who)))})
        users.append(found)
    if not users:
        raise ValidationError({"members": ERROR_MEMBERS_EMPTY})
    return users


@transaction.atomic
def project_create(
    *,
    team: Any,
    user: Any,
    name: Any,
    description: Any = "",
    instructions: Any = "",
    default_mode: Any = "",
    members: Iterable[Any] | None = WHOLE_TEAM,
) -> Project:
    """A new project of `team`, made by `user` (a member of the team). `members`: None for the whole
    team, else the chosen members of the team (the creator is always one of them)."""
    if not Membership.objects.filter(team=team, user=user).exists():
        raise PermissionDenied(ERROR_NOT_IN_TEAM)
    project = Project(
        team=team,
        name=_name(team, name),
        description=_text("description", description, DESCRIPTION_MAX, ERROR_DESCRIPTION_TOO_LONG),
        instructions=_text("instructions", instructions, INSTRUCTIONS_MAX, ERROR_INSTRUCTIONS_TOO_LONG),
        default_mode=_default_mode(team, default_mode),
        whole_team=members is WHOLE_TEAM,
        created_by=user,
    )
    chosen = [] if members is WHOLE_TEAM else _chosen_members(team, members)
    project.full_clean()
    project.save()
    if chosen:
        project.members.set({*chosen, user})
    _audit(ProjectAudit.Action.CREATED, project, actor=user, detail="whole team" if project.whole_team else "")
    for member in sorted({*chosen, user} if chosen else [], key=lambda u: u.username):
        _audit(ProjectAudit.Action.MEMBER_ADDED, project, actor=user, detail=member.username)
    return project


def _audit(action: str, project: Project, *, actor: Any, detail: str = "") -> None:
    ProjectAudit.objects.create(
        action=action,
        actor=actor if getattr(actor, "pk", None) else None,
        actor_name=getattr(actor, "username", "") or "",
        project_id=project.pk,
        project_name=project.name,
        detail=detail[:255],
    )


def _audit_members(project: Project, *, actor: Any, was_whole: bool, before: set[str], after: set[str]) -> None:
    """Membership changes as audit rows: who was added, who removed, and the whole team given or taken."""
    if was_whole and not project.whole_team:
        _audit(ProjectAudit.Action.MEMBER_REMOVED, project, actor=actor, detail="whole team")
    for name in sorted(after - before):
        _audit(ProjectAudit.Action.MEMBER_ADDED, project, actor=actor, detail=name)
    for name in sorted(before - after):
        _audit(ProjectAudit.Action.MEMBER_REMOVED, project, actor=actor, detail=name)
    if project.whole_team and not was_whole:
        _audit(ProjectAudit.Action.MEMBER_ADDED, project, actor=actor, detail="whole team")


UNCHANGED: Any = object()


@transaction.atomic
def project_update(
    *,
    project: Project,
    user: Any,
    name: Any = UNCHANGED,
    description: Any = UNCHANGED,
    instructions: Any = UNCHANGED,
    default_mode: Any = UNCHANGED,
    members: Any = UNCHANGED,
) -> Project:
    """Change what is given (callers found `project` through project_get, so `user` is a member).
    `members`: None gives the project to the whole team, a list to those members of the team."""
    if name is not UNCHANGED:
        project.name = _name(project.team, name, exclude=project.pk)
    if description is not UNCHANGED:
        project.description = _text("description", description, DESCRIPTION_MAX, ERROR_DESCRIPTION_TOO_LONG)
    if instructions is not UNCHANGED:
        project.instructions = _text("instructions", instructions, INSTRUCTIONS_MAX, ERROR_INSTRUCTIONS_TOO_LONG)
    if default_mode is not UNCHANGED:
        project.default_mode = _default_mode(project.team, default_mode)
    chosen: list[Any] = []
    was_whole = project.whole_team
    before = set() if was_whole else set(project.members.values_list("username", flat=True))
    if members is not UNCHANGED:
        if not project_can_manage(user=user, project=project):
            raise PermissionDenied(ERROR_MANAGE_MEMBERS)
        chosen = [] if members is WHOLE_TEAM else _chosen_members(project.team, members)
        project.whole_team = members is WHOLE_TEAM
    project.full_clean()
    project.save()
    if members is not UNCHANGED:
        project.members.set(chosen)
        after = {u.username for u in chosen}
        _audit_members(project, actor=user, was_whole=was_whole, before=before, after=after)
    return project


@transaction.atomic
def project_delete(*, project: Project, user: Any) -> None:
    """Delete the project. Its sessions stay, with no project ("No project" in the sidebar): the
    foreign key is SET_NULL, so nobody loses a conversation with it. Its files' content goes (each a
    FileAudit purge row naming the project); their rows stay for the audit, with no project."""
    if not project_can_manage(user=user, project=project):
        raise PermissionDenied(ERROR_DELETE)
    purged = project_files_purge(project.pk, actor=user)
    _audit(ProjectAudit.Action.DELETED, project, actor=user)
    project_id = project.pk
    project.delete()
    for upload in purged:  # the knowledge index forgets them too (projects/signals.py)
        transaction.on_commit(partial(_removed, project_id, upload))


def _removed(project_id: str, upload: Any) -> None:
    project_file_removed.send(sender=Project, project=None, project_id=project_id, file=upload)


def project_teams(*, user: Any) -> list[Any]:
    """The teams `user` may make a project in (their own), each with `people`: its members by username
    (whom a project of that team may have as members)."""
    teams = list(Team.objects.filter(memberships__user=user).order_by("name").distinct())
    people = get_user_model().objects.filter(is_active=True).order_by("username")
    for team in teams:
        team.people = list(people.filter(memberships__team=team))  # type: ignore[attr-defined]
    return teams
