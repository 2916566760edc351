"""Sessions in projects: starting one in a project (its default mode when the caller names none, then
the team's), moving a session in and out (its owner only, into a project of the session's team they
are a member of), and a deleted project leaving its sessions under "No project"."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError

from agents.branching import session_branch
from agents.conversations import session_start
from agents.models import AgentSession
from agents.sessions import (
    ERROR_NO_PROJECT,
    ERROR_PROJECT_OTHER_TEAM,
    SessionReadOnlyError,
    session_create,
    session_set_project,
)
from aptix.models import Membership
from modes.models import AgentMode
from projects.services import project_create, project_delete
from tests.helpers.turns import add_events, ended_turn

pytestmark = pytest.mark.django_db

BRANCH = {"previousMode": "general", "newMode": "data-analysis", "reason": "Data questions", "branch": True}


@pytest.fixture
def sales(team_a, alice):
    return project_create(team=team_a, user=alice, name="Sales", default_mode="data-analysis")


def test_a_session_started_in_a_project_takes_its_default_mode_unless_the_caller_names_one(team_a, alice, sales):
    assert session_create(team=team_a, user=alice, project=sales).mode == "data-analysis"
    assert session_create(team=team_a, user=alice, project=sales, mode="ddr-authoring").mode == "ddr-authoring"
    session, turn = session_start(team=team_a, user=alice, project=sales, text="Revenue?")
    assert (session.project, session.mode, turn.mode) == (sales, "data-analysis", "data-analysis")
    plain = project_create(team=team_a, user=alice, name="Plain")
    assert session_create(team=team_a, user=alice, project=plain).mode == "general"  # the team's default
    AgentMode.objects.filter(key="data-analysis").update(is_active=False)  # the project's default is gone
    assert session_create(team=team_a, user=alice, project=sales).mode == "general"


def test_nobody_starts_a_session_in_a_project_they_are_not_a_member_of(team_a, team_b, alice, bob, carol, sales):
    board = project_create(team=team_a, user=alice, name="Board", members=["alice"])
    with pytest.raises(ValidationError) as refused:
        session_create(team=team_a, user=bob, project=board)
    assert refused.value.message_dict == {"project": [ERROR_NO_PROJECT]}
    with pytest.raises(ValidationError) as other_team:
        session_create(team=team_b, user=carol, project=sales)
    assert other_team.value.message_dict == {"project": [ERROR_NO_PROJECT]}
    Membership.objects.create(team=team_b, user=alice)
    with pytest.raises(ValidationError) as crossed:
        session_create(team=team_b, user=alice, project=sales)
    assert crossed.value.message_dict == {"project": [ERROR_PROJECT_OTHER_TEAM]}
    assert not AgentSession.objects.exists()


def test_the_owner_moves_a_session_in_and_out_keeping_its_mode(team_a, alice, bob, sales):
    session = session_create(team=team_a, user=alice, mode="ddr-authoring")
    session_set_project(session=session, user=alice, project=sales)
    session.refresh_from_db()
    assert (session.project, session.mode) == (sales, "ddr-authoring")
    with pytest.raises(SessionReadOnlyError):
        session_set_project(session=session, user=bob, project=None)  # a teammate, not its owner
    session_set_project(session=session, user=alice, project=None)
    session.refresh_from_db()
    assert session.project is None


def test_a_session_cannot_move_into_a_project_of_another_team_or_one_its_owner_is_not_in(
    team_a, team_b, alice, bob, carol
):
    theirs = project_create(team=team_b, user=carol, name="Theirs")
    board = project_create(team=team_a, user=alice, name="Board", members=["alice"])
    session = session_create(team=team_a, user=bob)
    for project in (theirs, board):
        with pytest.raises(ValidationError) as refused:
            session_set_project(session=session, user=bob, project=project)
        assert refused.value.message_dict == {"project": [ERROR_NO_PROJECT]}
    session.refresh_from_db()
    assert session.project is None


def test_deleting_a_project_moves_its_sessions_to_no_project(team_a, alice, sales):
    session = session_create(team=team_a, user=alice, project=sales)
    project_delete(project=sales, user=alice)
    session.refresh_from_db()
    assert session.project is None and session.deleted_at is None


def test_a_branch_opens_in_its_parents_project_while_its_user_is_a_member(team_a, alice, sales):
    session = session_create(team=team_a, user=alice, project=sales, mode="general")
    ended_turn(session, status="completed", message="Chart revenue by month")
    turn = ended_turn(session, status="completed", index=2, message="3", state={"mode_changes": [BRANCH]})
    add_events(turn, ("turn.completed", {"branch": {"mode": "data-analysis", "reason": "Data questions"}}))
    child, _ = session_branch(session=session, turn_id=turn.id, user=alice)
    assert (child.parent, child.project, child.mode) == (session, sales, "data-analysis")
