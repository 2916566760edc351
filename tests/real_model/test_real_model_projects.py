"""A project's sales CSV and three policy PDFs, uploaded once, used from two new sessions of it through
a real model (tests/agents/run/test_project_files_offline.py does the same with the offline model and
checks the answers). What holds whatever a small model chooses: each session is offered the
project's files tools and knowledge search, each turn ends in a final state with an answer, its
calls are well-formed or reported; and what the tools answer is the project's: a files query reads
the CSV's table, a knowledge search about hotels finds the travel policy's page on them. What the
model did and answered is printed (-s)."""

from __future__ import annotations

import re

import pytest
from asgiref.sync import sync_to_async

from agents.run.context import context_budget
from agents.sessions import session_create
from files.models import SessionFile
from tests.helpers import async_db
from tests.helpers.files import media  # noqa: F401 - media: autouse fixture
from tests.helpers.knowledge import sales_project
from tests.helpers.real_model import check_turn, run

pytestmark = async_db  # committed: the knowledge indexer's thread reads the uploads


def _told(label: str, turn, events) -> list[dict]:
    results = [e.payload for e in events if e.type == "tool.result"]
    called = [(e.payload["name"], e.payload["arguments"]) for e in events if e.type == "tool.called"]
    print(f"\n[{label}] {turn.status}; calls: {called}\nanswer: {turn.answer[:600]}")
    return results


@pytest.mark.timeout(1800)  # four to ten model calls on a 2-core machine's CPU
async def test_two_new_sessions_of_a_project_use_its_csv_and_its_policies(real_llm, team_a, alice, bob):
    project = await sync_to_async(sales_project)(team_a, alice)
    policy = await SessionFile.objects.aget(project=project, name="travel_policy.pdf")
    names = {f.name async for f in SessionFile.objects.filter(project=project)}
    budget = context_budget(real_llm.context_tokens)
    asked = {
        "table": (bob, "What is the total revenue in quarterly_sales.csv?"),
        "policy": (alice, "What does the travel policy say about hotels? Cite the page."),
    }
    for label, (user, question) in asked.items():
        session = await sync_to_async(session_create)(
            team=team_a, user=user, project=project, mode="data-analysis", execution="agent"
        )
        turn, events = await run(real_llm, session, question, max_steps=5)
        await check_turn(turn, events, budget)
        assert turn.answer.strip()
        offered = {name for e in events if e.type == "step.started" for name in e.payload["tools"]}
        assert {"files_list", "files_query", "knowledge_search"} <= offered, offered
        for result in _told(label, turn, events):
            if result["name"] == "files_list" and result["ok"]:
                assert "quarterly_sales" in result["result"] and '"project": true' in result["result"]
            if result["name"] == "knowledge_search" and result["ok"]:
                cited = re.findall(r"^\[\d+\] “([^”]+)”, page (\d+)", result["result"], re.MULTILINE)
                assert {name for name, _page in cited} <= names  # the project's documents only
                call = next(e.payload for e in events if e.type == "tool.called" and e.payload["id"] == result["id"])
                if cited and "hotel" in call["arguments"].lower():
                    assert cited[0] == (policy.name, "2"), cited
