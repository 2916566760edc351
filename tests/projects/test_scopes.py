"""A mode's knowledge scope: "project" (the default), "none", or a list of project ids or names the mode
always searches; validated in the admin, the mode file and the curators' API, versioned with the mode,
and resolved for a user to the projects they are a member of, never more."""

from __future__ import annotations

import json

import pytest
from django.core.exceptions import ValidationError

from aptix.models import Membership, Team
from aptix.tokens import api_token_create
from modes.files.plan import plan_import
from modes.files.sources import MODE, Source
from modes.forms import KnowledgeScopeField
from modes.models import AgentMode, ModeVersion
from modes.validators import ERROR_KNOWLEDGE_SCOPE, validate_knowledge_scope
from modes.versioning import snapshot_of
from projects.scopes import knowledge_projects
from projects.services import project_create, project_update

pytestmark = pytest.mark.django_db

MODE_FILE = """---
key: policy-qa
name: Policy Q&A
description: Answers from the policy library
order: 5
tools: []
approvals: []
roles: []
examples: []
knowledge: {knowledge}
---

Answer from the policies.
"""


@pytest.mark.parametrize("good", ["project", "none", ["Policies"], ["project", "Policies", "0123456789abcdef0123"]])
def test_a_scope_is_project_none_or_a_list_of_projects(good):
    validate_knowledge_scope(good)


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        ("everything", ERROR_KNOWLEDGE_SCOPE),
        ([], ERROR_KNOWLEDGE_SCOPE),
        (3, ERROR_KNOWLEDGE_SCOPE),
        (["Policies", " "], "Item 2 must be a non-empty string."),
        (["Policies", "policies"], "Item 2 names a project already in the list."),
        ([f"p{n}" for n in range(21)], "At most 20 projects."),
    ],
)
def test_a_bad_scope_is_refused_saying_what_is_wrong(bad, message):
    with pytest.raises(ValidationError) as caught:
        validate_knowledge_scope(bad)
    assert caught.value.messages == [message]


def test_the_admin_edits_the_scope_as_lines():
    field = KnowledgeScopeField()
    assert field.clean("") == "project"  # empty: the default
    assert field.clean(" None \n") == "none"
    assert field.clean("Policies\n\nHandbook\n") == ["Policies", "Handbook"]
    assert field.prepare_value(["Policies", "Handbook"]) == "Policies\nHandbook"


def test_the_scope_is_versioned_with_the_mode_and_defaults_to_the_sessions_project():
    general = AgentMode.objects.get(key="general")
    assert general.knowledge_scope == "project"
    assert snapshot_of(general)["knowledge_scope"] == "project"
    # every version kept before the field existed has the default in its snapshot (migration 0019)
    assert all(v.snapshot.get("knowledge_scope") == "project" for v in ModeVersion.objects.all())


def test_a_mode_file_carries_the_scope_and_a_bad_one_is_named_with_its_line(team_a):
    plan = plan_import([Source("policy-qa.mode.md", MODE_FILE.format(knowledge="[Policies]"), MODE)])
    assert plan.problems == []
    assert plan.modes[0].values["knowledge_scope"] == ["Policies"]

    plan = plan_import([Source("policy-qa.mode.md", MODE_FILE.format(knowledge="everything"), MODE)])
    assert [str(p) for p in plan.problems] == [f"policy-qa.mode.md:10: knowledge: {ERROR_KNOWLEDGE_SCOPE}"]


@pytest.fixture
def library(team_a, alice):
    return project_create(team=team_a, user=alice, name="Policies", instructions="")


def test_project_means_the_sessions_project_for_a_member(team_a, alice, bob, library):
    assert knowledge_projects(user=alice, session_project_id=library.id, scope="project") == [library.id]
    assert knowledge_projects(user=alice, session_project_id=None, scope="project") == []
    assert knowledge_projects(user=alice, session_project_id=library.id, scope="none") == []


def test_a_list_names_projects_by_id_or_name_whatever_the_session_is_in(team_a, alice, library):
    sales = project_create(team=team_a, user=alice, name="Sales")
    by_name = knowledge_projects(user=alice, session_project_id=sales.id, scope=["policies"])
    assert by_name == [library.id]  # names match case-insensitively; the session's own is not added
    both = knowledge_projects(user=alice, session_project_id=sales.id, scope=[library.id, "project", "Policies"])
    assert both == [library.id, sales.id]  # "project" in the list adds the session's own; each once


def test_a_scope_never_reaches_a_project_the_user_is_not_a_member_of(team_a, alice, bob, carol, library):
    board = project_create(team=team_a, user=alice, name="Board", members=["alice"])
    scope = ["Policies", "Board", board.id]
    assert knowledge_projects(user=alice, session_project_id=None, scope=scope) == [library.id, board.id]
    assert knowledge_projects(user=bob, session_project_id=board.id, scope=scope) == [library.id]  # not chosen
    assert knowledge_projects(user=bob, session_project_id=board.id, scope="project") == []
    assert knowledge_projects(user=carol, session_project_id=library.id, scope=scope) == []  # another team

    other = Team.objects.create(name="Other", slug="other")
    Membership.objects.create(team=other, user=carol)
    theirs = project_create(team=other, user=carol, name="Policies")
    assert knowledge_projects(user=carol, session_project_id=None, scope=["Policies"]) == [theirs.id]
    project_update(project=library, user=alice, members=["alice"])  # alice alone now
    assert knowledge_projects(user=bob, session_project_id=None, scope=["Policies"]) == []


@pytest.mark.asyncio
@pytest.mark.django_db(transaction=True, serialized_rollback=True)
async def test_the_curators_api_sets_the_scope_and_names_a_bad_one(curator):
    from asgiref.sync import sync_to_async

    from tests.helpers import ServerLikeAsyncClient

    _, token = await sync_to_async(api_token_create)(user=curator, name="ci")
    client = ServerLikeAsyncClient()
    headers = {"Authorization": f"Bearer {token}"}
    base = "/api/v1/catalog/modes/general"
    answer = await client.post(
        f"{base}/drafts", json.dumps({"knowledge": ["Policies"]}), content_type="application/json", headers=headers
    )
    assert answer.status_code == 201, answer.content
    published = await client.post(
        f"{base}/versions/{answer.json()['version']}/publish", "{}", content_type="application/json", headers=headers
    )
    assert published.status_code == 200
    assert (await AgentMode.objects.aget(key="general")).knowledge_scope == ["Policies"]

    bad = await client.post(
        f"{base}/drafts", json.dumps({"knowledge": "all"}), content_type="application/json", headers=headers
    )
    assert bad.status_code == 400
    assert bad.json()["error"]["field"] == "knowledge"
    assert ERROR_KNOWLEDGE_SCOPE in bad.json()["error"]["message"]
