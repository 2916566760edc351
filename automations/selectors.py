"""Reads the automations' pages need beyond the services' own (automation_get, automations_of,
inbox_open, inbox_count): runs to list, an inbox item to decide, the form's choices. Views call
these; they never query the ORM themselves."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.db.models import OuterRef, QuerySet, Subquery

from agents.models import AgentSession
from agents.sessions import session_list
from aptix.models import Membership

from .models import Automation, AutomationRun, InboxItem

RUNS_SHOWN = 50
SESSIONS_OFFERED = 30


def runs_of(*, automation: Automation, limit: int = RUNS_SHOWN) -> list[AutomationRun]:
    """The automation's newest runs (the detail page's history)."""
    return list(AutomationRun.objects.filter(automation=automation).order_by("-created_at", "-id")[:limit])


def run_get(*, run_id: str) -> AutomationRun | None:
    """A run as it is now (the page that began it asks how it went)."""
    return AutomationRun.objects.filter(pk=run_id).first()


def last_runs(*, automations: list[Automation]) -> dict[str, AutomationRun]:
    """Each automation's newest run, by the automation's id (the list page's "last run" column)."""
    newest = AutomationRun.objects.filter(automation=OuterRef("pk")).order_by("-created_at", "-id").values("pk")[:1]
    ids = Automation.objects.filter(pk__in=[a.pk for a in automations]).values_list(Subquery(newest), flat=True)
    return {run.automation_id: run for run in AutomationRun.objects.filter(pk__in=[i for i in ids if i])}


def inbox_item_get(*, user: Any, item_id: int) -> InboxItem | None:
    """The user's open inbox item `item_id` (theirs as the owner or the delegate), or None."""
    return (
        InboxItem.objects.filter(pk=item_id, user=user, resolved_at__isnull=True)
        .select_related("automation", "run", "run__automation", "approval", "approval__turn")
        .first()
    )


def team_others(*, team: Any, user: Any) -> list[str]:
    """The usernames of the team's other active members (the delegate select)."""
    members = Membership.objects.filter(team=team).values("user_id")
    users = get_user_model().objects.filter(pk__in=members, is_active=True).exclude(pk=user.pk)
    return list(users.order_by("username").values_list("username", flat=True))


def sessions_to_append_to(*, user: Any, team: Any, keep: AgentSession | None = None) -> list[AgentSession]:
    """The user's recent sessions in the team (the "append to session" select), plus `keep` (the
    automation's current one) when it is older than those."""
    sessions: QuerySet[AgentSession] = session_list(user=user).filter(team=team)
    found = list(sessions[:SESSIONS_OFFERED])
    if keep is not None and keep.deleted_at is None and all(s.pk != keep.pk for s in found):
        found.append(keep)
    return found
