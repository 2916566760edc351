"""Admin → Sessions and Turns: staff tell active, pinned, archived and (soft-)deleted sessions apart (a
deleted session stays listed there for the audit); turns are listed newest first by a readable title."""

from __future__ import annotations

import pytest
from django.urls import reverse
from django.utils import timezone

from agents.sessions import session_create
from tests.helpers.turns import ended_turn

ADMIN_LIST = "/admin/agents/agentsession/"


@pytest.fixture
def sessions(team_a, alice):
    now = timezone.now()
    made = {}
    for name, fields in {
        "plain": {},
        "pinned": {"pinned_at": now},
        "archived": {"archived_at": now},
        "deleted": {"deleted_at": now, "pinned_at": now},
    }.items():
        session = session_create(team=team_a, user=alice, title=f"{name} session")
        for field, value in fields.items():
            setattr(session, field, value)
        session.save()
        made[name] = session
    return made


@pytest.mark.parametrize(
    ("state", "listed"),
    [
        ("active", {"plain", "pinned"}),
        ("pinned", {"pinned"}),
        ("archived", {"archived"}),
        ("deleted", {"deleted"}),
        (None, {"plain", "pinned", "archived", "deleted"}),
    ],
)
def test_the_state_filter(admin_client, sessions, state, listed):
    response = admin_client.get(ADMIN_LIST, {"state": state} if state else {})
    assert response.status_code == 200
    assert {s.title.split()[0] for s in response.context["cl"].result_list} == listed


def test_the_list_says_each_sessions_state(admin_client, sessions):
    html = admin_client.get(ADMIN_LIST).content.decode()
    assert "Deleted by the owner" in html  # the filter's choice
    assert "deleted " + f"{sessions['deleted'].deleted_at:%Y-%m-%d}" in html
    for word in ("pinned", "archived", "active"):
        assert f'<td class="field-state">{word}</td>' in html


@pytest.mark.django_db
def test_turns_are_listed_newest_first_with_a_readable_title(admin_client, team_a, alice):
    session = session_create(team=team_a, user=alice, title="Plans")
    ended_turn(session, status="completed", message="First   question\nabout caching")
    ended_turn(session, status="completed", index=2, message="Second question")
    page = admin_client.get(reverse("admin:agents_turn_changelist")).content.decode()
    second, first = (
        page.index(">Plans · #2: Second question</a>"),
        page.index(">Plans · #1: First question about caching</a>"),
    )
    assert second < first


@pytest.mark.django_db
def test_a_turn_shows_its_trace_id_and_is_found_by_it(admin_client, team_a, alice):
    session = session_create(team=team_a, user=alice, title="Traced")
    trace_id = "0af7651916cd43dd8448eb211c80319c"
    traced = ended_turn(session, status="completed", traceparent=f"00-{trace_id}-b7ad6b7169203331-01")
    ended_turn(session, status="completed", index=2, message="Untraced")
    changelist = reverse("admin:agents_turn_changelist")
    assert f'<td class="field-trace_id">{trace_id}</td>' in admin_client.get(changelist).content.decode()
    found = admin_client.get(changelist, {"q": trace_id}).content.decode()  # pasted from a trace or a log line
    assert "#1: Hello" in found and "Untraced" not in found
    detail = admin_client.get(reverse("admin:agents_turn_change", args=[traced.pk])).content.decode()
    assert trace_id in detail
