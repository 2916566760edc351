"""Knowledge search in a turn: offered in a session of a project whose documents its user may search,
whatever the mode's tool policy says, and nowhere else; the offline model searches the project's
documents for a policy question and answers citing the passage (file, section, link that opens it)."""

from __future__ import annotations

import json
import re

import pytest
from asgiref.sync import sync_to_async

from agents.models import AgentSession
from agents.run.reasoner import Reasoner
from modes.models import AgentMode
from projects.services import project_create
from tests.helpers import inline_db
from tests.helpers.events import events_of
from tests.helpers.files import media  # noqa: F401 - media: autouse fixture
from tests.helpers.knowledge import POLICY_MD, project_document
from tools.base import ToolContext
from tools.builtin.knowledge_search import ERROR_NO_PROJECT, KnowledgeSearchTool

pytestmark = inline_db


@pytest.fixture
def project(team_a, alice):
    return project_create(team=team_a, user=alice, name="Handbook", members=["alice"])


@pytest.fixture
def policy(alice, project):
    return project_document(alice, project, "travel.md", POLICY_MD, now=True)


def offered(model) -> set[str]:
    return {t["function"]["name"] for t in model.requests[0].get("tools", [])}


async def test_the_offline_model_answers_a_policy_question_citing_the_passage(
    make_session, run_turn, offline, project, policy
):
    session = await make_session(mode="general", execution="agent", project=project)
    turn = await run_turn(session, text="What is the hotel limit in capitals?", reasoner=Reasoner(llm=offline))
    await offline.client.close()
    assert turn.status == "completed", turn.error
    results = await events_of(turn, "tool.result")
    assert [r["name"] for r in results] == ["knowledge_search"] and results[0]["ok"]
    passage = re.search(r"passage ([0-9a-f]{32})", results[0]["result"]).group(1)
    assert turn.answer.startswith("According to **travel.md**, section 2 (Hotels):"), turn.answer
    assert "180 euros in capitals" in turn.answer
    assert f"[travel.md, section 2](/files/{policy.pk}/view?page=2#passage-{passage})" in turn.answer


async def test_offered_in_a_project_session_whatever_the_policy_and_not_elsewhere(
    make_session, run_turn, model, project, policy
):
    session = await make_session(mode="general", execution="agent", project=project)
    policy_names = await sync_to_async(lambda: AgentMode.objects.get(key=session.mode).tool_policy)()
    assert not any("knowledge" in name for name in policy_names)  # offered all the same
    model.reply("ok")
    await run_turn(session, text="Hello")
    assert "knowledge_search" in offered(model)

    alone = await make_session(mode="general", execution="agent")
    model.requests.clear()
    model.reply("ok")
    await run_turn(alone, text="Hello")
    assert "knowledge_search" not in offered(model)


async def test_a_session_of_someone_no_longer_a_member_is_not_offered_it(
    make_session, run_turn, model, project, policy, bob
):
    session = await make_session(mode="general", execution="agent", project=project)
    await AgentSession.objects.filter(pk=session.pk).aupdate(user=bob)  # bob is not a chosen member
    model.reply("ok")
    await run_turn(await AgentSession.objects.aget(pk=session.pk), text="Hello")
    assert "knowledge_search" not in offered(model)


async def test_the_tool_searches_only_the_projects_its_context_names(project, policy, team_a, alice):
    tool = KnowledgeSearchTool()
    context = ToolContext(session_id="s", org=team_a, user=alice, knowledge_projects=(project.pk,))
    found = await tool.execute(json.dumps({"query": "meals a day", "top_k": 1}), context)
    assert found.successful
    assert found.result.startswith("The passages of the project's documents that best match “meals a day”")
    assert "(ranking: bm25)" in found.result
    assert re.search(r"\[1\] “travel\.md”, section 3 — Meals \(passage [0-9a-f]{32}, score [\d.]+\)", found.result)
    assert "45 euros a day" in found.result and "[2]" not in found.result
    nobody = await tool.execute(json.dumps({"query": "meals"}), ToolContext(session_id="s", org=team_a, user=alice))
    assert nobody.error_message == ERROR_NO_PROJECT
    for bad, message in [({}, "requires \"query\""), ({"query": "x", "top_k": 21}, "from 1 to 20")]:
        refused = await tool.execute(json.dumps(bad), context)
        assert not refused.successful and message in refused.error_message


async def test_with_nothing_in_the_projects_documents_the_offline_model_reads_the_sessions_files(
    make_session, run_turn, offline, project, alice
):
    from pathlib import Path

    from django.core.files import File

    from files.services import file_upload

    session = await make_session(mode="general", execution="agent", project=project)  # a project without documents
    sample = Path(__file__).resolve().parents[3] / "aptix" / "demo_data" / "travel_policy.pdf"

    def attach():
        with open(sample, "rb") as handle:
            file_upload(owner=alice, uploaded=File(handle, name=sample.name), session=session)

    await sync_to_async(attach)()
    turn = await run_turn(session, text="What does the policy say about hotels?", reasoner=Reasoner(llm=offline))
    await offline.client.close()
    results = await events_of(turn, "tool.result")
    assert [r["name"] for r in results] == ["knowledge_search", "files_list", "files_read"]
    assert "No passage of the project's documents matches" in results[0]["result"]
    assert "hotel" in turn.answer.lower() and "I found nothing" not in turn.answer


async def test_the_modes_knowledge_scope_decides_what_a_turn_searches(
    make_session, run_turn, model, project, policy, team_a, alice
):
    """`none` keeps the tool away even in the project; a list names projects a session outside them
    searches; a name the user is not a member of adds nothing (projects/scopes.py)."""
    general = await AgentMode.objects.aget(key="general")
    general.knowledge_scope = "none"
    await general.asave(update_fields=["knowledge_scope"])
    in_project = await make_session(mode="general", execution="agent", project=project)
    model.reply("ok")
    await run_turn(in_project, text="Hello")
    assert "knowledge_search" not in offered(model)

    general.knowledge_scope = ["handbook", "Board of someone else"]
    await general.asave(update_fields=["knowledge_scope"])
    alone = await make_session(mode="general", execution="agent")  # in no project
    model.requests.clear()
    model.reply("", tool_calls=[("knowledge_search", {"query": "hotel nightly limit"})])
    model.reply("ok")
    turn = await run_turn(alone, text="Hotels?")
    assert "knowledge_search" in offered(model)
    results = await events_of(turn, "tool.result")
    assert results[0]["ok"] and "180 euros in capitals" in results[0]["result"]


async def test_an_answer_that_cites_no_passage_gets_the_sources_listed(make_session, run_turn, model, project, policy):
    """A small model answered a policy question from the passages but cited none, so the reader could
    not open the page: the passages the search returned are listed under the answer; an answer that
    cites one itself is left as it is."""
    session = await make_session(mode="general", execution="agent", project=project)
    model.reply("", tool_calls=[("knowledge_search", {"query": "hotel limit capitals"})])
    model.reply("Hotels cost up to 180 euros a night in capitals.")
    turn = await run_turn(session, text="What is the hotel limit in capitals?")
    [result] = await events_of(turn, "tool.result")
    links = re.findall(r"cite: \[([^]]+)\]\(([^)]+)\)", result["result"])
    assert links[0][0] == "travel.md, section 2"
    listed = ", ".join(f"[{label}]({link})" for label, link in links[:3])
    assert turn.answer == f"Hotels cost up to 180 euros a night in capitals.\n\nSources: {listed}"
    [completed] = await events_of(turn, "turn.completed")
    assert completed["answer"] == turn.answer

    model.reply("", tool_calls=[("knowledge_search", {"query": "hotel limit capitals"})])
    model.reply(f"Up to 180 euros ([{links[0][0]}]({links[0][1]})).")
    turn = await run_turn(session, text="And again?")
    assert turn.answer == f"Up to 180 euros ([{links[0][0]}]({links[0][1]}))."
