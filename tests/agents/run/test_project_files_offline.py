"""A project's files used from new sessions of it, with the built-in offline model: the sample sales
CSV and travel policy PDF (aptix/demo_data/) and two more policies (PDFs) uploaded once to the
project; a session started in the project afterwards is offered the files tools and answers a table
question and a policy question from them — the travel policy through knowledge search among the three,
its index built in the background as the upload commits, the answer citing the right page. A session
of the same user outside the project is offered none of it."""

from __future__ import annotations

import pytest
from asgiref.sync import sync_to_async

from agents.run.reasoner import Reasoner
from files.models import SessionFile
from tests.helpers import async_db
from tests.helpers.events import events_of
from tests.helpers.files import media  # noqa: F401 - media: autouse fixture
from tests.helpers.knowledge import sales_project

pytestmark = async_db  # committed: the knowledge indexer's thread reads the uploads


@pytest.fixture
async def project(team_a, alice):
    return await sync_to_async(sales_project)(team_a, alice)


async def ask(run_turn, session, offline, text):
    turn = await run_turn(session, text=text, reasoner=Reasoner(llm=offline))
    assert turn.status == "completed", turn.error
    return turn, await events_of(turn, "tool.result")


async def test_a_new_session_of_the_project_answers_from_its_csv(make_session, run_turn, project, offline, bob):
    session = await make_session(user=bob, project=project, mode="data-analysis", execution="agent")
    turn, results = await ask(run_turn, session, offline, "What is the total revenue?")
    await offline.client.close()
    assert [r["name"] for r in results][:2] == ["files_list", "files_query"]
    assert '"project": true' in results[0]["result"]
    assert "The total revenue is **1581500" in turn.answer, turn.answer


async def test_a_new_session_of_the_project_reads_its_policy(make_session, run_turn, project, offline):
    session = await make_session(project=project, mode="data-analysis", execution="agent")
    turn, results = await ask(run_turn, session, offline, "What does the travel policy say about hotels?")
    await offline.client.close()
    assert [r["name"] for r in results] == ["knowledge_search"]
    policy = await SessionFile.objects.aget(project=project, name="travel_policy.pdf")
    assert "180 euros a night" in turn.answer, turn.answer
    assert f"[travel_policy.pdf, page 2](/files/{policy.pk}/view?page=2#passage-" in turn.answer


async def test_a_session_outside_the_project_is_not_offered_its_files(make_session, run_turn, project, offline):
    session = await make_session(mode="data-analysis", execution="agent")
    turn, results = await ask(run_turn, session, offline, "What is the total revenue?")
    await offline.client.close()
    assert not {r["name"] for r in results} & {"files_list", "files_query", "files_read"}
    assert "1581500" not in turn.answer
