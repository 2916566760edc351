"""Knowledge search on the web: `POST /api/v1/projects/<id>/search`, the citation link that opens a
document at its passage, and the indexing progress on the project page. Alice and bob are in team A,
the project is alice's alone; bob (same team, not chosen) and carol (team B) get nothing of it."""

from __future__ import annotations

import json

import pytest

from aptix.tokens import api_token_create
from files.models import KnowledgeIndex
from projects.services import project_create
from tests.helpers.files import media  # noqa: F401 - media: autouse fixture
from tests.helpers.knowledge import POLICY_MD, project_document

pytestmark = pytest.mark.django_db


@pytest.fixture
def project(team_a, alice):
    return project_create(team=team_a, user=alice, name="Handbook", members=["alice"])


@pytest.fixture
def policy(alice, project):
    return project_document(alice, project, "travel.md", POLICY_MD, now=True)


def _search(client, project_id, user, body) -> tuple[int, dict]:
    headers = {"HTTP_AUTHORIZATION": f"Bearer {api_token_create(user=user)[1]}"} if user else {}
    response = client.post(
        f"/api/v1/projects/{project_id}/search", json.dumps(body), content_type="application/json", **headers
    )
    return response.status_code, response.json()


def test_the_api_answers_the_best_passages_with_their_file_page_and_link(client, alice, project, policy):
    status, answer = _search(client, project.pk, alice, {"query": "hotel limit in capitals", "topK": 2})
    assert status == 200 and answer["mode"] == "bm25"
    best = answer["passages"][0]
    assert best["file"] == {"id": policy.pk, "name": "travel.md"}
    assert (best["page"], best["title"]) == (2, "Hotels") and "180 euros" in best["text"]
    assert best["score"] > 0 and len(best["id"]) == 32 and len(answer["passages"]) <= 2
    assert best["link"] == f"/files/{policy.pk}/view?page=2#passage-{best['id']}"


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({}, "query"),
        ({"query": "  "}, "query"),
        ({"query": "x", "topK": 0}, "topK"),
        ({"query": "x", "topK": "3"}, "topK"),
        ({"query": "x", "top_k": 3}, "top_k"),
    ],
)
def test_the_api_names_a_bad_field(client, alice, project, body, field):
    status, answer = _search(client, project.pk, alice, body)
    assert status == 400 and answer["error"]["field"] == field, answer


def test_nobody_outside_the_project_gets_a_passage_through_the_api(client, bob, carol, project, policy):
    for user in (bob, carol):
        status, answer = _search(client, project.pk, user, {"query": "hotel"})
        assert status == 404 and answer["error"]["message"] == "No project with this id."
    assert _search(client, "0" * 32, bob, {"query": "hotel"})[0] == 404
    assert _search(client, project.pk, None, {"query": "hotel"})[0] == 401


def test_the_citation_link_opens_the_document_at_the_passage(client, alice, project, policy):
    _status, answer = _search(client, project.pk, alice, {"query": "meals", "topK": 1})
    client.force_login(alice)
    page = client.get(answer["passages"][0]["link"].split("#")[0])
    html = page.content.decode()
    assert page.status_code == 200
    assert f'id="passage-{answer["passages"][0]["id"]}"' in html and "45 euros a day" in html
    assert 'id="page-3"' in html and "Section 3 — Meals" in html


def test_nobody_outside_the_project_opens_its_document_by_a_crafted_id(client, bob, carol, policy):
    for user in (bob, carol):
        client.force_login(user)
        assert client.get(f"/files/{policy.pk}/view?page=1").status_code == 404
        assert client.get(f"/files/{policy.pk}/").status_code == 404
    assert client.get("/files/not-an-id/view").status_code == 404


def test_the_project_page_shows_each_documents_indexing(client, alice, project, policy):
    client.force_login(alice)
    html = client.get(f"/projects/{project.pk}/").content.decode()
    assert "travel.md" in html and "indexed, 4 passages" in html and 'hx-trigger="every 2s"' not in html
    KnowledgeIndex.objects.filter(file=policy).update(state="indexing", passages_done=2)
    card = client.get(f"/projects/{project.pk}/knowledge/").content.decode()
    assert "indexed 2/4 passages" in card and 'hx-trigger="every 2s"' in card  # polled while it indexes


def test_a_non_member_does_not_get_the_progress_card(client, bob, project, policy):
    client.force_login(bob)
    assert client.get(f"/projects/{project.pk}/knowledge/").status_code == 404


def test_the_tools_panel_says_where_knowledge_search_is_offered(team_a, alice, project):
    from agents.sessions import session_create
    from agents.web.toolpanel import tool_panel

    def row(session):
        return next(r for r in tool_panel(session)["internal"] if r.name == "knowledge_search")

    alone = session_create(team=team_a, user=alice, mode="general", execution="agent")
    assert row(alone).blocked == "offered in a project's sessions"
    inside = session_create(team=team_a, user=alice, mode="general", execution="agent", project=project)
    assert row(inside).blocked == "" and not row(inside).outside_policy  # whatever the mode's policy says
