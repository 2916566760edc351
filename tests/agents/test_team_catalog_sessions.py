"""Team catalogs in the session services: a new session's mode (the caller's, then the team's default,
then the catalog's), the session manager refusing another team's mode as an unknown one, and a
session whose mode stops being its team's moving on before its next turn."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError

from agents.sessions import SessionManager, session_create
from agents.turns import CLOSED_TO_TEAM_REASON, DEACTIVATED_REASON, turn_start
from aptix.models import Team
from modes.catalog import ModeValidationError
from modes.models import AgentMode, ModeHistory, TeamDefaultMode
from tests.helpers.catalogs import B_ONLY, team_only_mode

pytestmark = pytest.mark.django_db

VALID_FOR_A = "Valid modes: general, ddr-authoring, workflow-authoring, data-analysis."


@pytest.fixture
def b_only(team_b):
    return team_only_mode(team_b)


def test_a_new_session_starts_in_the_callers_mode_then_the_teams_default_then_the_catalogs(
    team_a, team_b, alice, carol, b_only
):
    assert session_create(team=team_a, user=alice).mode == "general"  # the catalog's
    TeamDefaultMode.objects.create(team=team_a, mode=AgentMode.objects.get(key="ddr-authoring"))
    TeamDefaultMode.objects.create(team=team_b, mode=b_only)
    assert session_create(team=team_a, user=alice).mode == "ddr-authoring"  # the team's
    assert session_create(team=team_a, user=alice, mode=" ").mode == "ddr-authoring"
    assert session_create(team=team_a, user=alice, mode="data-analysis").mode == "data-analysis"  # the caller's
    assert session_create(team=team_b, user=carol).mode == B_ONLY  # each team its own


def test_a_session_cannot_be_created_in_another_teams_mode(team_a, alice, b_only):
    with pytest.raises(ValidationError) as refused:
        session_create(team=team_a, user=alice, mode=B_ONLY)
    assert refused.value.message_dict["mode"] == [f"Unknown or inactive mode '{B_ONLY}'. {VALID_FOR_A}"]


def test_the_session_manager_refuses_another_teams_mode_exactly_as_an_unknown_one(team_a, alice, b_only):
    session = session_create(team=team_a, user=alice)
    manager = SessionManager()
    errors = []
    for mode in [B_ONLY, "astrology"]:
        for org, user in [(team_a, alice), (None, None)]:  # the tool's call, and a system call
            with pytest.raises(ModeValidationError) as refused:
                manager.set_session_mode_sync(session.id, mode, "why", org, user)
            errors.append(str(refused.value))
    assert (
        errors
        == [f"Unknown or inactive mode '{B_ONLY}'. {VALID_FOR_A}"] * 2
        + [f"Unknown or inactive mode 'astrology'. {VALID_FOR_A}"] * 2
    )
    session.refresh_from_db()
    assert session.mode == "general" and not ModeHistory.objects.exists()


def test_the_session_manager_switches_to_a_mode_of_the_sessions_own_team(team_b, carol, b_only):
    session = session_create(team=team_b, user=carol)
    assert SessionManager().set_session_mode_sync(session.id, B_ONLY, "secret work", team_b, carol) == (
        "general",
        B_ONLY,
    )


def test_a_session_whose_mode_leaves_its_team_moves_to_the_teams_default_before_its_next_turn(team_b, carol, b_only):
    TeamDefaultMode.objects.create(team=team_b, mode=AgentMode.objects.get(key="data-analysis"))
    session = session_create(team=team_b, user=carol, mode=B_ONLY)
    b_only.teams.set([Team.objects.create(name="Team C", slug="team-c")])
    turn = turn_start(session=session, text="Go on")
    session.refresh_from_db()
    assert session.mode == "data-analysis" and turn.mode == "data-analysis"
    [row] = ModeHistory.objects.filter(session=session)
    assert (row.previous_mode, row.new_mode, row.source) == (B_ONLY, "data-analysis", "system")
    assert row.reason == CLOSED_TO_TEAM_REASON.format(mode=B_ONLY)


def test_a_deactivated_mode_still_moves_the_session_on_as_today(team_a, alice):
    session = session_create(team=team_a, user=alice, mode="ddr-authoring")
    AgentMode.objects.filter(key="ddr-authoring").update(is_active=False)
    turn_start(session=session, text="Go on")
    session.refresh_from_db()
    [row] = ModeHistory.objects.filter(session=session)
    assert session.mode == "general" and row.reason == DEACTIVATED_REASON.format(mode="ddr-authoring")


def test_a_session_never_starts_in_a_team_default_that_no_longer_applies(team_b, carol, b_only):
    TeamDefaultMode.objects.create(team=team_b, mode=b_only)
    AgentMode.objects.filter(pk=b_only.pk).update(is_active=False)
    assert session_create(team=team_b, user=carol).mode == "general"
    AgentMode.objects.filter(pk=b_only.pk).update(is_active=True)
    b_only.teams.set([Team.objects.create(name="Team C", slug="team-c")])
    assert session_create(team=team_b, user=carol).mode == "general"
    b_only.delete()
    assert session_create(team=team_b, user=carol).mode == "general"
