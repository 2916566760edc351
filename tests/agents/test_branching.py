"""Branching a session into another mode (agents/branching.py): the branch is made once however often
its button is pressed, the page then links to it, and the branch runs with its mode's execution."""

from __future__ import annotations

import pytest
from django.urls import reverse

from agents.branching import session_branch
from agents.models import AgentSession, Turn
from agents.sessions import session_create
from modes.models import AgentMode
from tests.helpers.turns import add_events, ended_turn


@pytest.fixture
def session(team_a, alice):
    return session_create(team=team_a, user=alice, title="Plans")


BRANCH = {"previousMode": "general", "newMode": "data-analysis", "reason": "Data questions", "branch": True}


def branched(session) -> Turn:
    """A proposal answered with "new session in Data Analysis": the turn that asks for the branch."""
    ended_turn(session, status="completed", message="Chart revenue by month")
    turn = ended_turn(session, status="completed", index=2, message="3", state={"mode_changes": [BRANCH]})
    add_events(turn, ("turn.completed", {"branch": {"mode": "data-analysis", "reason": "Data questions"}}))
    return turn


@pytest.mark.django_db
def test_a_branch_is_made_once_and_its_button_becomes_a_link(client, session, alice, password):
    turn = branched(session)
    child, _ = session_branch(session=session, turn_id=turn.id, user=alice)
    again, none = session_branch(session=session, turn_id=turn.id, user=alice)  # a second click
    assert (again.id, none) == (child.id, None)
    assert AgentSession.objects.filter(parent=session).count() == 1
    assert list(child.turns.values_list("user_message", flat=True)) == ["Chart revenue by month"]

    client.login(username="alice", password=password)
    page = client.get(reverse("session-detail", args=[session.id])).content.decode()
    assert 'class="branch"' not in page and "Continue in a new" not in page
    assert f'class="button primary branch-link" href="/sessions/{child.id}/"' in page


@pytest.mark.django_db
def test_a_branch_runs_as_its_modes_catalog_entry_says_else_as_its_parent(session, alice):
    """A Data Analysis branch of an Ask session needs the SQL tools its catalog entry's Agent execution
    gives it: starting in its parent's Ask left it without them."""
    assert session.execution == "ask"
    assert AgentMode.objects.get(key="data-analysis").execution == "agent"  # the seeded catalog says so
    child, _ = session_branch(session=session, turn_id=branched(session).id, user=alice)
    assert child.mode == "data-analysis" and child.execution == "agent"

    AgentMode.objects.filter(key="data-analysis").update(execution="")  # the entry names none
    other = session_create(team=session.team, user=alice, title="Other", execution="ask")
    child, _ = session_branch(session=other, turn_id=branched(other).id, user=alice)
    assert child.execution == "ask"  # the parent's
