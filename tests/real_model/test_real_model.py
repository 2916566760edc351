"""Ask and Agent turns through a real model server: every turn ends in a final state, tool calls are
well-formed or reported as errors, the stream renders, and the budgets hold."""

from __future__ import annotations

import json

import pytest
from asgiref.sync import sync_to_async

from agents.models import Turn, TurnEvent
from agents.run.context import context_budget
from agents.run.reasoner import Reasoner
from agents.sessions import session_create
from agents.turns import turn_start
from modes.models import AgentMode
from tests.helpers import async_db
from tests.helpers.real_model import check_turn, run

pytestmark = async_db


@pytest.mark.parametrize("execution", ["ask", "agent"])
async def test_a_plain_question(real_llm, team_a, alice, execution):
    session = await sync_to_async(session_create)(team=team_a, user=alice, execution=execution)
    turn, events = await run(real_llm, session, "In one sentence: what is a design decision record?", max_steps=3)
    await check_turn(turn, events, context_budget(real_llm.context_tokens))
    assert turn.status != "completed" or turn.answer.strip()


async def test_an_agent_turn_with_tools(real_llm, team_a, alice):
    await AgentMode.objects.filter(key="general").aupdate(tool_policy=["*"])
    session = await sync_to_async(session_create)(team=team_a, user=alice, execution="agent")
    turn, events = await run(
        real_llm, session, "List the available modes, then tell me which fits data work.", max_steps=4
    )
    await check_turn(turn, events, context_budget(real_llm.context_tokens))


async def test_a_follow_up_in_a_long_session_stays_in_budget(real_llm, team_a, alice):
    session = await sync_to_async(session_create)(team=team_a, user=alice, execution="ask")
    await sync_to_async(Turn.objects.bulk_create)(
        Turn(session=session, index=i, user_message=f"Note {i}", answer="ok " * 400, mode="general", status="completed")
        for i in range(1, 41)
    )
    turn, events = await run(real_llm, session, "Reply with the word yes.")
    await check_turn(turn, events, context_budget(real_llm.context_tokens))
    [started] = [e.payload for e in events if e.type == "turn.started"]
    assert started["history"]["turns_dropped"] > 0


@pytest.fixture
def demo_sql(tmp_path):
    """The demo database behind the real SQL MCP server, in a registry of its own."""
    import sys

    from tools.demo_data import build_demo_database
    from tools.mcp.host import McpHost
    from tools.registry import ToolRegistry

    demo = tmp_path / "demo.sqlite3"
    build_demo_database(demo)
    config = tmp_path / "mcp.json"
    server = {"command": sys.executable, "args": ["-m", "tools.mcp.sql_server", f"sqlite:///{demo}"]}
    config.write_text(json.dumps({"mcpServers": {"sql": server}}))
    registry = ToolRegistry("mcp")
    host = McpHost(config, registry=registry)
    host.start()
    host.wait_until_sync(lambda statuses: all(s.state == "ready" for s in statuses), 60)
    yield registry, demo
    host.stop()


async def test_the_data_question_ends_with_the_number(real_llm, team_a, alice, demo_sql):
    """The README's data question in Agent + data-analysis ends with an answer holding the count, in
    one turn or after one Continue."""
    import sqlite3

    registry, demo = demo_sql
    count = sqlite3.connect(demo).execute("select count(*) from orders").fetchone()[0]
    session = await sync_to_async(session_create)(team=team_a, user=alice, mode="data-analysis", execution="agent")
    turn, events = await run(real_llm, session, "How many orders are in the orders table?", max_steps=5, mcp=registry)
    await check_turn(turn, events, context_budget(real_llm.context_tokens))
    assert turn.answer.strip()  # never empty, whatever limit stopped it
    if str(count) not in turn.answer.replace(",", "") and turn.status == "limit_reached":
        resumed = await sync_to_async(turn_start)(session=session, text="", resume=True)
        turn = await Reasoner(llm=real_llm, max_steps=5, mcp=registry).run(resumed.id)
    assert str(count) in turn.answer.replace(",", ""), turn.answer


async def test_the_files_tour_question_ends_in_a_final_state(real_llm, team_a, alice, settings, tmp_path):
    """The README's files step with a real model: the sample CSV attached in Agent + data-analysis,
    "Which region grew fastest?". Its choices are its own (which tools, which SQL); what holds is a
    final state, well-formed calls or reported errors, and an answer. What it did is printed (-s)."""
    from pathlib import Path

    from django.core.files.uploadedfile import SimpleUploadedFile

    from files.services import file_upload

    settings.MEDIA_ROOT = tmp_path / "media"
    settings.FILES_CACHE_DIR = tmp_path / "cache"
    sample = Path(settings.BASE_DIR) / "aptix" / "demo_data" / "quarterly_sales.csv"
    session = await sync_to_async(session_create)(team=team_a, user=alice, mode="data-analysis", execution="agent")
    upload = SimpleUploadedFile(sample.name, sample.read_bytes())
    stored = await sync_to_async(file_upload)(owner=alice, uploaded=upload, session=session)
    turn = await sync_to_async(turn_start)(session=session, text="Which region grew fastest?", files=[stored.id])
    turn = await Reasoner(llm=real_llm, max_steps=5).run(turn.id)
    turn = await Turn.objects.select_related("session").aget(pk=turn.id)
    events = [e async for e in TurnEvent.objects.filter(turn=turn).order_by("seq")]
    await check_turn(turn, events, context_budget(real_llm.context_tokens))
    assert turn.answer.strip()
    calls = [(e.payload["name"], e.payload["arguments"]) for e in events if e.type == "tool.called"]
    print(f"\nfiles tour with {real_llm.model}: {turn.status}; calls {calls}; answer {turn.answer[:300]!r}")
