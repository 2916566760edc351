"""Issue 15's fixes below the browser: a stopped turn's tool cards and token count, a user's message shown
as typed, the offline model's answer to a chart it cannot draw, a branch made once and then linked, the
catalog admin's policy help and warnings, the turn list, and manage.py outside `make`."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.conf import settings
from django.urls import reverse
from django.utils import timezone

from agents.branching import session_branch
from agents.llm.offline import plan_reply
from agents.models import AgentSession, Turn, TurnEvent
from agents.sessions import session_create
from agents.web.live import LiveRenderer
from agents.web.markdown import render_user_message
from agents.web.timeline import render_turn
from modes.models import AgentMode
from tests.helpers import mode_admin_form
from tools.registry import mcp_registry

from .test_offline_model import SQL, body, user


@pytest.fixture
def session(team_a, alice):
    return session_create(team=team_a, user=alice, title="Plans")


def ended_turn(session, *, status="cancelled", index=1, message="Hello", state=None, **fields) -> Turn:
    return Turn.objects.create(
        session=session,
        index=index,
        user_message=message,
        mode=session.mode,
        status=status,
        finished_at=timezone.now(),
        state=state or {},
        **fields,
    )


def events(turn: Turn, *typed: tuple[str, dict]) -> list[TurnEvent]:
    return [TurnEvent.objects.create(turn=turn, seq=i, type=t, payload=p) for i, (t, p) in enumerate(typed, 1)]


TOOL_CALLED = ("tool.called", {"id": "call_1", "name": "fixture__sleep", "kind": "mcp", "arguments": "{}"})


@pytest.mark.django_db
def test_a_stopped_turn_shows_its_unfinished_tool_call_as_stopped_on_the_page_and_the_stream(session):
    turn = ended_turn(session, step_count=1)
    stored = events(turn, ("step.started", {"step": 1, "tokens": 300}), TOOL_CALLED, ("turn.cancelled", {}))
    for html in (render_turn(turn, stored), LiveRenderer(session).render(turn, "turn.cancelled", {}, 3)):
        assert 'class="item tool-card tool-stopped" id="tool-call_1"' in html
        assert "running…" not in html and "not finished: the turn ended first" in html


@pytest.mark.django_db
def test_a_stream_stopped_mid_reply_counts_the_request_and_what_was_streamed(session):
    streamed = "word " * 170  # 850 characters
    turn = ended_turn(session, answer=streamed.strip())
    stored = events(
        turn,
        ("step.started", {"step": 1, "tokens": 300}),
        ("model.delta", {"text": streamed[:400]}),
        ("model.delta", {"text": streamed[400:]}),
        ("turn.cancelled", {}),
    )
    html = render_turn(turn, stored)
    assert "~513 tokens (estimated)" in html  # 300 sent + 850 / 4 streamed, not "0 tokens"


@pytest.mark.django_db
def test_a_reported_usage_is_not_counted_twice(session):
    turn = ended_turn(session, status="completed", answer="Hi.", prompt_tokens=40, completion_tokens=2)
    stored = events(
        turn,
        ("step.started", {"step": 1, "tokens": 38}),
        ("model.delta", {"text": "Hi."}),
        ("model.message", {"step": 1, "content": "Hi.", "tool_calls": [], "usage": {}}),
        ("turn.completed", {}),
    )
    html = render_turn(turn, stored)
    assert "· 42 tokens" in html and "estimated" not in html


def test_a_user_message_keeps_its_whitespace_and_fenced_code_and_is_escaped():
    html = render_user_message("Look:\n\n```py\nif x:\n    <b>y</b>\n```\nbye\n  now")
    assert html == (
        '<span class="plain">Look:</span>'
        '<pre><code class="language-py">if x:\n    &lt;b&gt;y&lt;/b&gt;</code></pre>'
        '<span class="plain">bye\n  now</span>'
    )
    assert render_user_message("<script>x</script>") == '<span class="plain">&lt;script&gt;x&lt;/script&gt;</span>'


# --- the offline model's chart of data it cannot read -----------------------------------------------


@pytest.mark.parametrize(
    ("execution", "tools", "says"),
    [
        ("ask", ["agent_change_mode", "agent_list_modes", "image_gen"], "switch the header to **Agent**"),
        ("agent", ["agent_change_mode", "image_gen"], "the database tools aren't available"),
    ],
)
async def test_a_chart_of_data_without_data_tools_says_what_it_needs(execution, tools, says):
    b = body(user("Chart revenue by month for our orders data"), tools=tools, mode="data-analysis", execution=execution)
    reply = await plan_reply(b, modes=[])
    assert reply.tool_calls == []  # no title card of the request
    assert says in reply.content and "give me the numbers" in reply.content


async def test_a_chart_of_data_with_the_sql_tools_still_queries_and_pictures_are_still_drawn():
    agent = body(user("Chart revenue by month"), tools=["image_gen", *SQL], mode="data-analysis", execution="agent")
    assert [c.name for c in (await plan_reply(agent, modes=[])).tool_calls] == ["sql__list_tables"]
    picture = body(user("Draw a picture of a lighthouse"), mode="data-analysis")
    assert [c.name for c in (await plan_reply(picture, modes=[])).tool_calls] == ["image_gen"]


# --- branching ------------------------------------------------------------------------------------------

BRANCH = {"previousMode": "general", "newMode": "data-analysis", "reason": "Data questions", "branch": True}


def branched(session) -> Turn:
    """A proposal answered with "new session in Data Analysis": the turn that asks for the branch."""
    ended_turn(session, status="completed", message="Chart revenue by month")
    turn = ended_turn(session, status="completed", index=2, message="3", state={"mode_changes": [BRANCH]})
    events(turn, ("turn.completed", {"branch": {"mode": "data-analysis", "reason": "Data questions"}}))
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
    """Bug 5: a Data Analysis branch of an Ask session had no SQL tools (it started in Ask)."""
    assert session.execution == "ask"
    assert AgentMode.objects.get(key="data-analysis").execution == "agent"  # the seeded catalog says so
    child, _ = session_branch(session=session, turn_id=branched(session).id, user=alice)
    assert child.mode == "data-analysis" and child.execution == "agent"

    AgentMode.objects.filter(key="data-analysis").update(execution="")  # the entry names none
    other = session_create(team=session.team, user=alice, title="Other", execution="ask")
    child, _ = session_branch(session=other, turn_id=branched(other).id, user=alice)
    assert child.execution == "ask"  # the parent's


# --- admin -------------------------------------------------------------------------------------------


@pytest.fixture
def admin_client(client, django_user_model, password):
    django_user_model.objects.create_superuser("root", "root@example.com", password)
    client.login(username="root", password=password)
    return client


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


@pytest.mark.django_db
def test_turns_are_listed_newest_first_with_a_readable_title(admin_client, session):
    ended_turn(session, status="completed", message="First   question\nabout caching")
    ended_turn(session, status="completed", index=2, message="Second question")
    page = admin_client.get(reverse("admin:agents_turn_changelist")).content.decode()
    second, first = (
        page.index(">Plans · #2: Second question</a>"),
        page.index(">Plans · #1: First question about caching</a>"),
    )
    assert second < first


# --- manage.py outside make ------------------------------------------------------------------------------


def test_manage_py_uses_the_secret_key_make_run_keeps(tmp_path):
    """A command of the README run on its own (no SECRET_KEY, DEBUG off) uses var/secret_key."""
    root = Path(settings.BASE_DIR)
    clone = tmp_path / "clone"
    clone.mkdir()
    (clone / "manage.py").write_text((root / "manage.py").read_text())
    env = {k: v for k, v in os.environ.items() if k not in ("SECRET_KEY", "DATABASE_URL")}
    env.update({"DEBUG": "false", "PYTHONPATH": str(root), "APTIX_VAR_DIR": str(tmp_path / "var")})
    command = [
        sys.executable,
        "manage.py",
        "shell",
        "-c",
        "from django.conf import settings; print(settings.SECRET_KEY)",
        "--no-imports",
    ]
    first = subprocess.run(command, check=False, cwd=clone, env=env, capture_output=True, text=True, timeout=120)
    assert first.returncode == 0, first.stderr
    key = (clone / "var" / "secret_key").read_text().strip()
    assert first.stdout.strip() == key and len(key) > 40
    again = subprocess.run(command, check=True, cwd=clone, env=env, capture_output=True, text=True, timeout=120)
    assert again.stdout.strip() == key  # the same key every time
