"""The cases of a routing run and the throwaway sessions they run in (sync services: the database).

A case is one utterance of an active mode the team may use, expected to route to that mode, or to
stay (`STAY`) when it is one of the team's default mode's own. A case's session is flagged
`catalog_test`, so it is listed for nobody (agents/sessions.py `session_list`), and deleted (the
app's soft delete, as a user's) once its case is recorded."""

from __future__ import annotations

from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction

from aptix.models import Membership, Team
from modes.catalog import active_modes, default_mode_for_team, drafts_applied, normalize_mode_key
from modes.models import AgentMode, ModeHistory
from modes.proposal import find_proposal

from ..approvals import requested_mode
from ..models import AgentSession, ToolApproval, Turn
from ..selectors import mode_proposed
from ..sessions import session_create, session_delete, session_set_model
from ..turns import turn_start

STAY = "stay"
FAILED = "error"  # a case whose turn failed (a model error): no mode, and never right
# The catalog test run (CatalogTestRun id) whose cases this task runs: its sessions are marked with it,
# so stopping or deleting the run finds them (agents/catalog_tests/execute.py sets it per run).
case_run: ContextVar[str | None] = ContextVar("aptix_catalog_case_run", default=None)
ERROR_NO_TEAM = "{user} is a member of no team, and there is no team to run the catalog's tests in."


@dataclass(frozen=True)
class RoutingCase:
    utterance: str
    expected: str  # a mode key, or STAY for the default mode's own utterances
    mode: str  # the mode the utterance belongs to


def utterances_of(mode: AgentMode) -> list[str]:
    """The utterances a routing run sends for `mode`: its examples (shown to the model) and its test
    utterances (kept from it), each once, in that order."""
    # The one place that reads `test_utterances`: the catalog entry gains it beside the examples.
    tests = getattr(mode, "test_utterances", None) or []
    seen: set[str] = set()
    found: list[str] = []
    for item in [*(mode.example_utterances or []), *tests]:
        text = str(item).strip()
        if text and text not in seen:
            seen.add(text)
            found.append(text)
    return found


def routing_team(*, user: Any) -> Team:
    """The team a user's routing run runs in: their first team by name; a superuser in none may use
    the first team there is (runs are theirs: usage and quota are counted for them in it)."""
    membership = Membership.objects.filter(user=user).select_related("team").order_by("team__name").first()
    if membership is not None:
        return membership.team
    team = Team.objects.order_by("name").first() if user.is_superuser else None
    if team is None:
        raise ValidationError(ERROR_NO_TEAM.format(user=user))
    return team


def routing_cases(*, team: Team, drafts: bool = False) -> list[RoutingCase]:
    """Every utterance of every active mode `team` may use, in the catalog's order: of the published
    catalog, or, with `drafts`, of the catalog with its drafts applied (modes/drafts.py: the drafts'
    utterances, the modes a draft makes active, without those a draft deactivates)."""
    with drafts_applied(drafts):
        default = default_mode_for_team(team)
        modes = active_modes(team=team)
    return [
        RoutingCase(utterance=text, expected=STAY if mode.key == default else mode.key, mode=mode.key)
        for mode in modes
        for text in utterances_of(mode)
    ]


def case_session_create(
    *, user: Any, team: Team, mode: str | None = None, execution: str = "ask", model: str = "", drafts: bool = False
) -> AgentSession:
    """A hidden session for one case: in `mode` (None: the team's default), `execution`, on `model` (a
    models.json key, or "" for the mode's or the default model), over the published catalog or, with
    `drafts`, the catalog with its drafts applied (then `mode` may be one only a draft makes active)."""
    with drafts_applied(drafts):
        session = session_create(team=team, user=user, mode=mode, execution=execution)
    session.catalog_test = True
    session.catalog_drafts = drafts
    session.catalog_run_id = case_run.get()
    session.save(update_fields=["catalog_test", "catalog_drafts", "catalog_run"])
    if model:
        session_set_model(session=session, model=model)
    return session


def case_turn_start(*, user: Any, team: Team, utterance: str, model: str, drafts: bool = False) -> Turn:
    """A hidden session in the team's default mode, Ask, and its first turn (queued; the caller
    dispatches it)."""
    with transaction.atomic():
        session = case_session_create(user=user, team=team, model=model, drafts=drafts)
        return turn_start(session=session, text=utterance)


def case_outcome(*, turn: Turn) -> str:
    """The mode the turn moved towards: an agent_change_mode call's (waiting for consent, or made), a
    proposal's in its answer, else STAY; FAILED when the turn failed. A mode the catalog does not
    have is reported as named."""
    start = normalize_mode_key(turn.mode)
    if turn.status == Turn.Status.FAILED:
        return FAILED
    asked = ToolApproval.objects.filter(turn=turn, kind=ToolApproval.Kind.MODE_CHANGE)
    for approval in asked.order_by("requested_at"):
        wanted = requested_mode(approval.arguments)
        if wanted and wanted != start:
            return wanted
    moved = ModeHistory.objects.filter(session_id=turn.session_id).exclude(new_mode=start).order_by("created_at")
    change = moved.values_list("new_mode", flat=True).first()  # a change made at once (consent `trust`)
    if change:
        return normalize_mode_key(change)
    proposal = find_proposal(turn.answer or "")
    if proposal is None:
        return STAY
    session = AgentSession.objects.select_related("team").get(pk=turn.session_id)
    with drafts_applied(session.catalog_drafts):  # a mode only a draft makes active is one it may propose
        found = mode_proposed(key=proposal.key, name=proposal.display_name, team=session.team)
    key = found[0] if found else normalize_mode_key(proposal.key or proposal.display_name)
    return STAY if key == start else key


def case_session_delete(*, session_id: str) -> None:
    """Delete a case's session once its turn has ended (the turn's row and events stay, as a user's
    deleted session's do, for the audit and the usage counted for it)."""
    session_delete(session=AgentSession.objects.get(pk=session_id))
