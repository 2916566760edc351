"""The admin as personas: a curator edits the catalog, an auditor reads and exports the history,
a plain member cannot open the admin, and nobody can rewrite the audit trail."""

from __future__ import annotations

import csv
import io

import pytest
from django.urls import reverse

from agents.sessions import SessionManager, session_create
from modes.models import AgentMode, ModeHistory
from tests.helpers import mode_admin_form
from tools.registry import mcp_registry

pytestmark = pytest.mark.django_db


@pytest.fixture
def history(team_a, alice):
    session = session_create(team=team_a, user=alice, title="Quarterly numbers")
    SessionManager().set_session_mode_sync(session.id, "data-analysis", "=HYPERLINK(\"x\")", team_a, alice)
    return ModeHistory.objects.get()


def change_url(mode: AgentMode) -> str:
    return reverse("admin:modes_agentmode_change", args=[mode.pk])


# --- curator ----------------------------------------------------------------------------------


def test_curator_edits_lists_one_item_per_line(client, curator, password):
    client.login(username=curator.username, password=password)
    mode = AgentMode.objects.get(key="data-analysis")
    assert "sql.*" in client.get(change_url(mode)).content.decode()
    response = client.post(
        change_url(mode),
        mode_admin_form(
            mode,
            example_utterances="Plot churn by month\n\n  Which region sells most?  \n",
            tool_policy="sql.*\nimage_gen",
        ),
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    mode.refresh_from_db()
    assert mode.example_utterances == ["Plot churn by month", "Which region sells most?"]
    assert mode.tool_policy == ["sql.*", "image_gen"]


def test_curator_sets_and_unsets_a_modes_ask_follow_up(client, curator, password):
    """Unset by default (the model's askFollowup, else APTIX_ASK_FOLLOWUP decides); a curator can say
    yes or no for the mode, and unset it again."""
    client.login(username=curator.username, password=password)
    mode = AgentMode.objects.get(key="general")
    assert mode.ask_followup is None
    page = client.get(change_url(mode)).content.decode()
    assert 'name="ask_followup"' in page and "The model&#x27;s setting" in page
    for value, stored in [("True", True), ("False", False), ("", None)]:
        response = client.post(change_url(mode), mode_admin_form(mode, ask_followup=value))
        assert response.status_code == 302, response.content.decode()[:2000]
        mode.refresh_from_db()
        assert mode.ask_followup is stored


def test_curator_sees_validation_errors_on_the_form(client, curator, password):
    client.login(username=curator.username, password=password)
    mode = AgentMode.objects.get(key="data-analysis")
    before = list(mode.tool_policy)
    assert "sql.*" in before and "files_query" in before
    response = client.post(change_url(mode), mode_admin_form(mode, tool_policy="sql.*\nrm -rf /"))
    assert response.status_code == 200
    assert "Invalid tool policy entries: &#x27;rm -rf /&#x27;" in response.content.decode()
    mode.refresh_from_db()
    assert mode.tool_policy == before


def test_curator_cannot_unset_or_deactivate_the_default(client, curator, password):
    client.login(username=curator.username, password=password)
    general = AgentMode.objects.get(key="general")
    data = mode_admin_form(general)
    data.pop("is_default")
    response = client.post(change_url(general), data)
    assert response.status_code == 200
    assert "There must always be a default mode" in response.content.decode()
    data = mode_admin_form(general)
    data.pop("is_active")
    response = client.post(change_url(general), data)
    assert "The default mode cannot be deactivated" in response.content.decode()
    general.refresh_from_db()
    assert general.is_default and general.is_active


def test_curator_makes_another_mode_default_in_the_form(client, curator, password):
    client.login(username=curator.username, password=password)
    mode = AgentMode.objects.get(key="ddr-authoring")
    response = client.post(change_url(mode), mode_admin_form(mode, is_default="on"))
    assert response.status_code == 302
    assert list(AgentMode.objects.filter(is_default=True).values_list("key", flat=True)) == ["ddr-authoring"]


def test_curator_adds_a_mode(client, curator, password):
    client.login(username=curator.username, password=password)
    response = client.post(
        reverse("admin:modes_agentmode_add"),
        {
            "key": " Support-Triage ",
            "display_name": "Support triage",
            "description": "Sort tickets.",
            "system_prompt": "Triage.",
            "human_role_hints": "Support agent",
            "example_utterances": "Triage ticket 42",
            "tool_policy": "agent_list_modes",
            "is_active": "on",
            "ordering": 50,
        },
    )
    assert response.status_code == 302, response.content.decode()[:3000]
    mode = AgentMode.objects.get(key="support-triage")
    assert mode.human_role_hints == ["Support agent"] and not mode.is_default


def test_the_default_mode_cannot_be_deleted_from_the_admin(client, curator, password):
    client.login(username=curator.username, password=password)
    general = AgentMode.objects.get(key="general")
    response = client.post(reverse("admin:modes_agentmode_delete", args=[general.pk]), {"post": "yes"}, follow=True)
    # refused, saying why (it used to be a bare 403), and the mode is still there
    assert response.redirect_chain == [(change_url(general), 302)]
    assert "The default mode cannot be deleted" in response.content.decode()
    assert AgentMode.objects.filter(pk=general.pk).exists()
    response = client.post(
        reverse("admin:modes_agentmode_changelist"),
        {"action": "delete_selected", "_selected_action": [general.pk], "post": "yes"},
    )
    assert AgentMode.objects.filter(key="general").exists()


def test_curator_cannot_see_the_audit_trail(client, curator, password, history):
    client.login(username=curator.username, password=password)
    assert client.get(reverse("admin:modes_modehistory_changelist")).status_code == 403
    assert client.get(reverse("admin:agents_agentsession_changelist")).status_code == 403


# --- auditor ----------------------------------------------------------------------------------


def test_auditor_views_filters_and_exports_history(client, auditor, password, history, team_a, alice):
    client.login(username=auditor.username, password=password)
    url = reverse("admin:modes_modehistory_changelist")
    page = client.get(url)
    assert page.status_code == 200
    assert "data-analysis" in page.content.decode()
    for query in [
        f"team__id__exact={team_a.id}",
        f"user__id__exact={alice.id}",
        "previous_mode=general",
        "new_mode=data-analysis",
        f"created_at__year={history.created_at.year}",
    ]:
        filtered = client.get(f"{url}?{query}")
        assert filtered.status_code == 200 and "1 mode history entry" in filtered.content.decode(), query
    assert "0 results" in client.get(f"{url}?new_mode=general").content.decode()

    export = client.post(url, {"action": "export_csv", "_selected_action": [history.pk]})
    assert export.status_code == 200
    assert export["Content-Type"].startswith("text/csv")
    rows = list(csv.reader(io.StringIO(export.content.decode())))
    assert rows[0][:6] == ["created_at", "session_id", "team", "user", "previous_mode", "new_mode"]
    assert rows[1][1:6] == [history.session_id, "Team A", "alice", "general", "data-analysis"]
    assert rows[1][8] == "'=HYPERLINK(\"x\")"  # formula neutralised


def test_auditor_cannot_change_add_or_delete_history(client, auditor, password, history):
    client.login(username=auditor.username, password=password)
    detail = client.get(reverse("admin:modes_modehistory_change", args=[history.pk]))
    assert detail.status_code == 200 and 'name="_save"' not in detail.content.decode()
    assert client.post(reverse("admin:modes_modehistory_change", args=[history.pk]), {"reason": "x"}).status_code == 403
    assert client.get(reverse("admin:modes_modehistory_add")).status_code == 403
    assert client.post(reverse("admin:modes_modehistory_delete", args=[history.pk]), {"post": "yes"}).status_code == 403
    history.refresh_from_db()
    assert history.reason == '=HYPERLINK("x")'


def test_auditor_cannot_change_the_catalog(client, auditor, password):
    client.login(username=auditor.username, password=password)
    mode = AgentMode.objects.get(key="general")
    assert client.get(change_url(mode)).status_code == 200  # view only
    response = client.post(change_url(mode), mode_admin_form(mode, display_name="Hacked"))
    assert response.status_code == 403
    assert client.get(reverse("admin:modes_agentmode_add")).status_code == 403
    assert AgentMode.objects.get(key="general").display_name == "General"


def test_auditor_views_sessions_with_turns_and_events(client, auditor, password, history):
    from agents.models import Turn, TurnEvent

    turn = Turn.objects.create(session=history.session, index=1, user_message="hello", mode="general")
    TurnEvent.objects.create(turn=turn, seq=1, type="turn.started", payload={"mode": "general"})
    client.login(username=auditor.username, password=password)
    page = client.get(reverse("admin:agents_agentsession_change", args=[history.session_id]))
    assert page.status_code == 200 and "hello" in page.content.decode()
    page = client.get(reverse("admin:agents_turn_change", args=[turn.pk]))
    assert page.status_code == 200 and "turn.started" in page.content.decode()


def test_superuser_cannot_delete_or_edit_history_either(admin_client, history):
    assert (
        admin_client.post(reverse("admin:modes_modehistory_delete", args=[history.pk]), {"post": "yes"}).status_code
        == 403
    )
    page = admin_client.get(reverse("admin:modes_modehistory_changelist"))
    assert "delete_selected" not in page.content.decode()
    assert ModeHistory.objects.count() == 1


# --- plain member -----------------------------------------------------------------------------


def test_plain_member_cannot_open_the_admin(client, alice, password):
    client.login(username=alice.username, password=password)
    for url in [
        reverse("admin:index"),
        reverse("admin:modes_agentmode_changelist"),
        reverse("admin:modes_modehistory_changelist"),
    ]:
        response = client.get(url)
        assert response.status_code == 302 and "/admin/login/" in response["Location"]


# --- tool and approval policies ---------------------------------------------------------------------


class FakeSqlQuery:
    TOOL_NAME = "sql__query"
    TOOL_USAGE_METADATA = "Runs a query."
    is_tool_fully_executed_on_server = False

    @staticmethod
    def get_schema() -> dict:
        return {
            "type": "function",
            "function": {"name": "sql__query", "description": "q", "parameters": {"type": "object"}},
        }

    async def execute(self, arguments_json, context):  # pragma: no cover - never run
        raise NotImplementedError


@pytest.fixture
def sql_running():
    mcp_registry.register(FakeSqlQuery)
    yield
    mcp_registry.unregister("sql__query")


@pytest.mark.django_db
def test_the_policy_help_shows_its_placeholders(admin_client):
    mode = AgentMode.objects.get(key="data-analysis")
    page = admin_client.get(reverse("admin:modes_agentmode_change", args=[mode.pk])).content.decode()
    assert "&#x27;&lt;server&gt;.*&#x27; or &#x27;&lt;server&gt;.&lt;tool&gt;&#x27;" in page
    assert "<server>" not in page and "&lt;pattern&gt;: auto" in page


@pytest.mark.django_db
def test_unknown_policy_entries_are_saved_with_a_warning_naming_what_is_known(admin_client, sql_running):
    mode = AgentMode.objects.get(key="data-analysis")
    url = reverse("admin:modes_agentmode_change", args=[mode.pk])
    policy = "image_gen\nbogus_tool\nsql.nonexistent\nsql.query\nnowhere.*"
    response = admin_client.post(url, mode_admin_form(mode, tool_policy=policy), follow=True)
    text = " ".join(str(m) for m in response.context["messages"])
    assert "names tools this deployment does not know: bogus_tool, sql.nonexistent, nowhere.*." in text
    assert "image_gen" in text.split("Known internal tools:")[1] and "sql.* (query)" in text
    assert AgentMode.objects.get(pk=mode.pk).tool_policy == policy.splitlines()  # saved all the same

    response = admin_client.post(url, mode_admin_form(mode, tool_policy="image_gen\nsql.*"), follow=True)
    assert "does not know" not in " ".join(str(m) for m in response.context["messages"])


def test_the_default_modes_page_says_why_it_has_no_delete(client, curator, password):
    """Its delete page answered a bare 403; its change page had no Delete and no word why."""
    from modes.admin import DEFAULT_NOT_DELETABLE

    client.login(username=curator.username, password=password)
    general = AgentMode.objects.get(key="general")
    page = client.get(change_url(general)).content.decode()
    assert "The default mode cannot be deleted. Make another mode the default first (on its page" in page
    response = client.get(reverse("admin:modes_agentmode_delete", args=[general.pk]), follow=True)
    assert response.redirect_chain == [(change_url(general), 302)]
    assert DEFAULT_NOT_DELETABLE.replace("'", "&#x27;") in response.content.decode()
    assert AgentMode.objects.filter(pk=general.pk).exists()
    other = AgentMode.objects.get(key="ddr-authoring")
    assert client.get(reverse("admin:modes_agentmode_delete", args=[other.pk])).status_code == 200
