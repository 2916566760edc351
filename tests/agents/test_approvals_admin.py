"""The consent audit trail in the admin (DESIGN.md "Consent and approvals"): ToolApproval rows are
read-only for everyone, filterable and exportable as CSV with formulas neutralised; a mode's
approval policy is edited next to its tool policy; a mode history entry shows the approval that
consented to it."""

from __future__ import annotations

import csv
import io
from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from agents.models import ToolApproval, Turn
from agents.sessions import session_create
from modes.models import AgentMode, ModeHistory
from tests.helpers import mode_admin_form

pytestmark = pytest.mark.django_db

CHANGELIST = "admin:agents_toolapproval_changelist"


@pytest.fixture
def approvals_auditor(auditor):
    """The auditor persona: the "Auditors" group sees approvals (agents/migrations/0005)."""
    assert auditor.has_perm("agents.view_toolapproval")
    return auditor


@pytest.fixture
def turn(team_a, alice):
    session = session_create(team=team_a, user=alice, title="Notes")
    return Turn.objects.create(session=session, index=1, user_message="Note this", mode="general")


@pytest.fixture
def approvals(turn, team_a, alice):
    now = timezone.now()

    def make(tool_call_id, **fields):
        return ToolApproval.objects.create(
            session=turn.session, turn=turn, team=team_a, tool_call_id=tool_call_id, **fields
        )

    return {
        "approved": make(
            "call_add",
            tool="notes__add_note",
            server="notes",
            kind=ToolApproval.Kind.TOOL,
            arguments='{"text": "Buy milk"}',
            annotations={"readOnlyHint": False},
            decision=ToolApproval.Decision.APPROVED,
            scope=ToolApproval.Scope.SESSION,
            decided_by=alice,
            decided_at=now,
        ),
        "denied": make(
            "call_mode",
            tool="agent_change_mode",
            kind=ToolApproval.Kind.MODE_CHANGE,
            arguments='{"mode": "data-analysis"}',
            reason='=HYPERLINK("http://evil.example","click")',
            decision=ToolApproval.Decision.DENIED,
            scope=ToolApproval.Scope.ONCE,
            branch=False,
            decided_by=alice,
            decided_at=now,
        ),
        "pending": make("call_write", tool="fs__write_file", server="fs", kind=ToolApproval.Kind.TOOL, arguments="{}"),
    }


def count_text(n: int) -> str:
    return f"{n} tool approval{'' if n == 1 else 's'}"


# --- the approvals changelist -------------------------------------------------------------------


def test_auditor_sees_filters_and_searches_the_approvals(client, approvals_auditor, password, approvals, team_a):
    client.login(username=approvals_auditor.username, password=password)
    url = reverse(CHANGELIST)
    page = client.get(url)
    assert page.status_code == 200
    body = page.content.decode()
    assert count_text(3) in body
    assert "notes__add_note" in body and "agent_change_mode" in body and "fs__write_file" in body
    assert "Export selected as CSV" in body
    for query, expected in [
        ("decision=approved", 1),
        ("decision=denied", 1),
        ("decision=pending", 1),
        ("decision=cancelled", 0),
        ("kind__exact=mode_change", 1),
        ("kind__exact=tool", 2),
        ("scope__exact=session", 1),
        (f"team__id__exact={team_a.id}", 3),
        ("tool=notes__add_note", 1),
        ("q=call_write", 1),
        (f"q={approvals['approved'].session_id}", 3),
        ("q=alice", 2),
    ]:
        filtered = client.get(f"{url}?{query}")
        assert filtered.status_code == 200, query
        assert (count_text(expected) if expected else "0 tool approvals") in filtered.content.decode(), query


def test_nobody_can_add_change_or_delete_approvals(client, approvals_auditor, password, approvals, admin_client):
    row = approvals["approved"]
    change = reverse("admin:agents_toolapproval_change", args=[row.pk])
    delete = reverse("admin:agents_toolapproval_delete", args=[row.pk])
    client.login(username=approvals_auditor.username, password=password)
    detail = client.get(change)
    assert detail.status_code == 200
    assert 'name="_save"' not in detail.content.decode() and "Buy milk" in detail.content.decode()
    assert client.post(change, {"decision": "denied"}).status_code == 403
    assert client.get(reverse("admin:agents_toolapproval_add")).status_code == 403
    assert client.post(delete, {"post": "yes"}).status_code == 403
    # Superusers neither: the trail is append-only.
    assert admin_client.get(reverse("admin:agents_toolapproval_add")).status_code == 403
    assert admin_client.post(change, {"decision": "denied"}).status_code == 403
    assert admin_client.post(delete, {"post": "yes"}).status_code == 403
    assert "delete_selected" not in admin_client.get(reverse(CHANGELIST)).content.decode()
    row.refresh_from_db()
    assert (row.decision, ToolApproval.objects.count()) == ("approved", 3)


def test_staff_without_the_permission_cannot_see_approvals(client, curator, password, approvals):
    client.login(username=curator.username, password=password)
    assert client.get(reverse(CHANGELIST)).status_code == 403


def test_csv_export_has_every_field_and_neutralises_formulas(client, approvals_auditor, password, approvals, alice):
    client.login(username=approvals_auditor.username, password=password)
    selected = [row.pk for row in approvals.values()]
    export = client.post(reverse(CHANGELIST), {"action": "export_csv", "_selected_action": selected})
    assert export.status_code == 200
    assert export["Content-Type"].startswith("text/csv")
    assert export["Content-Disposition"].startswith('attachment; filename="tool-approvals-')
    header, *rows = csv.reader(io.StringIO(export.content.decode()))
    assert header == [
        "id",
        "requested_at",
        "session_id",
        "turn_id",
        "team",
        "tool_call_id",
        "tool",
        "server",
        "kind",
        "arguments",
        "annotations",
        "reason",
        "decision",
        "scope",
        "branch",
        "decided_by",
        "decided_at",
    ]
    by_call = {row[5]: dict(zip(header, row, strict=True)) for row in rows}
    assert sorted(by_call) == ["call_add", "call_mode", "call_write"]
    added = by_call["call_add"]
    approved = approvals["approved"]
    assert added["id"] == approved.pk
    assert (added["session_id"], added["turn_id"], added["team"]) == (
        approved.session_id,
        str(approved.turn_id),
        "Team A",
    )
    assert (added["tool"], added["server"], added["kind"]) == ("notes__add_note", "notes", "tool")
    assert (added["arguments"], added["annotations"]) == ('{"text": "Buy milk"}', '{"readOnlyHint": false}')
    assert (added["decision"], added["scope"], added["decided_by"]) == ("approved", "session", "alice")
    assert added["decided_at"] == approved.decided_at.isoformat()
    assert added["requested_at"] == approved.requested_at.isoformat()
    mode = by_call["call_mode"]
    assert mode["reason"] == "'=HYPERLINK(\"http://evil.example\",\"click\")"  # formula neutralised
    assert (mode["kind"], mode["decision"], mode["branch"]) == ("mode_change", "denied", "false")
    pending = by_call["call_write"]
    assert (pending["decision"], pending["scope"], pending["branch"], pending["decided_by"]) == ("", "", "", "")


# --- the catalog: approval policy -----------------------------------------------------------------


def test_curator_edits_the_approval_policy_next_to_the_tool_policy(client, curator, password):
    client.login(username=curator.username, password=password)
    mode = AgentMode.objects.get(key="data-analysis")
    url = reverse("admin:modes_agentmode_change", args=[mode.pk])
    form = client.get(url).content.decode()
    assert 'name="approval_policy"' in form
    assert form.index('name="tool_policy"') < form.index('name="approval_policy"')
    response = client.post(url, mode_admin_form(mode, approval_policy="sql.*: auto\n\n  notes.add_note: ask  \n*: ask"))
    assert response.status_code == 302, response.content.decode()[:2000]
    mode.refresh_from_db()
    assert mode.approval_policy == ["sql.*: auto", "notes.add_note: ask", "*: ask"]
    assert "notes.add_note: ask" in client.get(url).content.decode()


def test_a_bad_approval_policy_entry_is_refused_with_the_validators_message(client, curator, password):
    client.login(username=curator.username, password=password)
    mode = AgentMode.objects.get(key="data-analysis")
    url = reverse("admin:modes_agentmode_change", args=[mode.pk])
    response = client.post(url, mode_admin_form(mode, approval_policy="sql.*: auto\nsql.query: maybe"))
    assert response.status_code == 200
    assert (
        "Invalid approval policy entries: &#x27;sql.query: maybe&#x27;. Use &#x27;&lt;pattern&gt;: auto&#x27; or "
        "&#x27;&lt;pattern&gt;: ask&#x27;" in response.content.decode()
    )
    mode.refresh_from_db()
    assert mode.approval_policy == []


# --- the mode history: which approval consented ---------------------------------------------------


def history_entry(turn, team, user, tool_call_id="", **fields) -> ModeHistory:
    return ModeHistory.objects.create(
        session=turn.session,
        previous_mode="general",
        new_mode="data-analysis",
        team=team,
        user=user,
        turn=turn if tool_call_id else None,
        tool_call_id=tool_call_id,
        source=ModeHistory.Source.TOOL if tool_call_id else ModeHistory.Source.USER,
        **fields,
    )


def test_mode_history_shows_the_approval_that_consented(client, auditor, password, turn, team_a, alice):
    decided_at = timezone.now() - timedelta(minutes=5)
    ToolApproval.objects.create(
        session=turn.session,
        turn=turn,
        team=team_a,
        tool_call_id="call_switch",
        tool="agent_change_mode",
        kind=ToolApproval.Kind.MODE_CHANGE,
        decision=ToolApproval.Decision.APPROVED,
        scope=ToolApproval.Scope.ONCE,
        decided_by=alice,
        decided_at=decided_at,
    )
    consented = history_entry(turn, team_a, alice, tool_call_id="call_switch")
    by_user = history_entry(turn, team_a, alice)
    expected = f"approved by alice at {timezone.localtime(decided_at):%H:%M}"

    client.login(username=auditor.username, password=password)
    url = reverse("admin:modes_modehistory_changelist")
    page = client.get(url).content.decode()
    assert "column-approval" in page
    assert f'<td class="field-approval">{expected}</td>' in page
    assert '<td class="field-approval">—</td>' in page  # the user's own change: no approval
    detail = client.get(reverse("admin:modes_modehistory_change", args=[consented.pk])).content.decode()
    assert f'<div class="readonly">{expected}</div>' in detail
    detail = client.get(reverse("admin:modes_modehistory_change", args=[by_user.pk])).content.decode()
    assert "approved by" not in detail and '<div class="readonly">—</div>' in detail

    # One query for the rows however many there are: the approval comes from a subquery.
    with CaptureQueriesContext(connection) as two_rows:
        assert client.get(url).status_code == 200
    for n in range(3):
        history_entry(turn, team_a, alice, tool_call_id=f"call_other_{n}")
    with CaptureQueriesContext(connection) as five_rows:
        assert client.get(url).status_code == 200
    assert len(five_rows) == len(two_rows)


def test_a_denied_or_other_turns_approval_does_not_count(client, auditor, password, turn, team_a, alice):
    other_turn = Turn.objects.create(session=turn.session, index=2, user_message="again", mode="general")
    for t, call, decision in [
        (turn, "call_denied", ToolApproval.Decision.DENIED),
        (other_turn, "call_elsewhere", ToolApproval.Decision.APPROVED),
    ]:
        ToolApproval.objects.create(
            session=turn.session,
            turn=t,
            team=team_a,
            tool_call_id=call,
            tool="agent_change_mode",
            kind=ToolApproval.Kind.MODE_CHANGE,
            decision=decision,
            decided_by=alice,
            decided_at=timezone.now(),
        )
    history_entry(turn, team_a, alice, tool_call_id="call_denied")
    history_entry(turn, team_a, alice, tool_call_id="call_elsewhere")
    client.login(username=auditor.username, password=password)
    page = client.get(reverse("admin:modes_modehistory_changelist")).content.decode()
    assert "approved by" not in page and page.count('<td class="field-approval">—</td>') == 2
