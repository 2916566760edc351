"""The README's files tour with the built-in offline model: the sample sales CSV and travel policy
PDF (aptix/demo_data/) attached to a Data Analysis session in Agent execution. "Which region grew
fastest?" lists the files, queries the table and charts the answer; a total, a count and a top-N are
queried; a question about the policy reads the passages that match."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from asgiref.sync import sync_to_async
from django.core.files import File

from agents.run.reasoner import Reasoner
from files.services import file_upload
from tests.helpers import inline_db
from tests.helpers.events import events_of
from tests.helpers.files import media  # noqa: F401 - media: autouse fixture

pytestmark = inline_db
SAMPLES = Path(__file__).resolve().parents[3] / "aptix" / "demo_data"


@pytest.fixture
async def session(make_session, alice):
    session = await make_session(mode="data-analysis", execution="agent")

    def attach(name):
        with open(SAMPLES / name, "rb") as handle:
            file_upload(owner=alice, uploaded=File(handle, name=name), session=session)

    await sync_to_async(attach)("quarterly_sales.csv")
    await sync_to_async(attach)("travel_policy.pdf")
    return session


async def ask(run_turn, session, offline, text):
    turn = await run_turn(session, text=text, reasoner=Reasoner(llm=offline))
    assert turn.status == "completed", turn.error
    return turn, await events_of(turn, "tool.result")


async def test_which_region_grew_fastest_is_answered_with_a_chart(run_turn, session, offline, settings):
    turn, results = await ask(run_turn, session, offline, "Which region grew fastest?")
    await offline.client.close()
    assert [r["name"] for r in results] == ["files_list", "files_query", "image_gen"]
    assert all(r["ok"] for r in results)
    assert "| West | 60000" in results[1]["result"]
    assert turn.answer.startswith("**West** grew fastest: from 60000 to 93000 (+33000, 55.0%).")
    image = json.loads(results[2]["result"])
    assert image["url"] in turn.answer and (Path(settings.MEDIA_ROOT) / image["url"].removeprefix("/media/")).is_file()


@pytest.mark.parametrize(
    ("question", "figure"),
    [
        ("What is the total revenue?", "The total revenue is **1581500"),
        ("How many rows does the sales table have?", "The count is **16**"),
        ("How many orders were there?", "The total orders is **"),
        ("Show the top 2 regions by revenue", "| North | 515000"),
    ],
)
async def test_totals_counts_and_top_n(run_turn, session, offline, question, figure):
    turn, results = await ask(run_turn, session, offline, question)
    await offline.client.close()
    assert results[1]["name"] == "files_query" and figure in turn.answer, turn.answer
    if "top 2" in question:
        assert "| South | 392500" in turn.answer and "| East |" not in turn.answer and "LIMIT 2" in turn.answer


async def test_a_question_about_the_document_reads_the_matching_passage(run_turn, session, offline):
    turn, results = await ask(run_turn, session, offline, "What does the travel policy say about hotels?")
    await offline.client.close()
    assert [r["name"] for r in results] == ["files_list", "files_read"]
    assert "180 euros a night" in turn.answer and "[page 2" in turn.answer
