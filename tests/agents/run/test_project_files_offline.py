"""A project's files used from new sessions of it, with the built-in offline model: the sample sales
CSV and travel policy PDF (aptix/demo_data/) and two more policies (PDFs) uploaded once to the
project; a session started in the project afterwards is offered the files tools and answers a table
question and a policy question from them — the travel policy through knowledge search among the three,
its index built in the background as the upload commits, the answer citing the right page. A session
of the same user outside the project is offered none of it."""

from __future__ import annotations

from pathlib import Path

import pytest
from asgiref.sync import sync_to_async
from django.core.files import File

from agents.run.reasoner import Reasoner
from files.models import SessionFile
from projects.files import project_file_upload
from projects.services import project_create
from tests.helpers import async_db
from tests.helpers.events import events_of
from tests.helpers.files import media, pdf_bytes, uploaded  # noqa: F401 - media: autouse fixture
from tests.helpers.knowledge import indexed

pytestmark = async_db  # committed: the knowledge indexer's thread reads the uploads
SAMPLES = Path(__file__).resolve().parents[3] / "aptix" / "demo_data"
OTHER_POLICIES = {  # the search has to find the travel policy's page among three policies
    "it_security_policy.pdf": [
        "IT security policy. Passwords must have at least 14 characters.",
        "Laptops are encrypted. Report a lost laptop to the service desk within one hour.",
    ],
    "remote_work_policy.pdf": [
        "Remote work policy. Employees may work remotely up to three days a week.",
        "Working from a hotel or a cafe needs the company VPN.",
    ],
}


@pytest.fixture
async def project(team_a, alice):
    def make():
        project = project_create(team=team_a, user=alice, name="Sales")
        for name in ("quarterly_sales.csv", "travel_policy.pdf"):
            with open(SAMPLES / name, "rb") as handle:
                project_file_upload(user=alice, project=project, uploaded=File(handle, name=name))
        for name, pages in OTHER_POLICIES.items():
            project_file_upload(user=alice, project=project, uploaded=uploaded(name, pdf_bytes(pages)))
        indexed()  # the PDFs' passages (the CSV is a table: not indexed)
        return project

    return await sync_to_async(make)()


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
