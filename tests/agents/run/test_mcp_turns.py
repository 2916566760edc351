"""Turns with real MCP servers: the MCP host runs our SQL server (on the demo dataset) and
`mcp-server-time` as subprocesses, and the reasoner offers and calls their tools (spec 004 §2.2,
§4.2): only in Agent execution, filtered by the mode's policy and the session's toggles. The last
test is the embedded default end to end: the offline model answers a data question by querying
the demo database and charting the result (spec 004 §3.2)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from asgiref.sync import sync_to_async

from agents.llm import build_llm_client
from agents.run.pipeline import select_tools
from agents.run.reasoner import Reasoner
from modes.models import AgentMode
from tests.helpers import async_db
from tools.demo_data import build_demo_database
from tools.mcp.host import McpHost
from tools.registry import mcp_registry

pytestmark = [pytest.mark.slow, async_db]

READY_TIMEOUT = 60
ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def mcp_host(tmp_path_factory):
    """One host (its own thread and loop) for the module: sql on a fresh demo database, and time."""
    folder = tmp_path_factory.mktemp("mcp")
    database = folder / "demo.sqlite3"
    build_demo_database(database)
    config = folder / "mcp.json"
    config.write_text(
        json.dumps(
            {
                "mcpServers": {
                    "sql": {
                        "command": sys.executable,
                        "args": ["-m", "tools.mcp.sql_server", f"sqlite:///{database}"],
                        "cwd": str(ROOT),
                    },
                    "time": {"command": "mcp-server-time"},
                }
            }
        )
    )
    host = McpHost(config)
    host.start()
    statuses = host.wait_until_sync(lambda s: all(x.settled for x in s), READY_TIMEOUT)
    assert {s.name: s.state for s in statuses} == {"sql": "ready", "time": "ready"}, statuses
    yield host
    host.stop()
    assert not [name for name, _ in mcp_registry if name.startswith(("sql__", "time__"))]


def offered(model) -> set[str]:
    return set(model.last_tools)


async def tool_results(turn) -> list[dict]:
    return [e.payload async for e in turn.events.filter(type="tool.result").order_by("seq")]


async def test_agent_turn_calls_the_sql_server(mcp_host, make_session, run_turn, model):
    session = await make_session(mode="data-analysis", execution="agent")
    model.reply("", tool_calls=[("sql__query", {"sql": "SELECT COUNT(*) AS n FROM customers"})])
    model.reply("There are 60 customers.")
    turn = await run_turn(session, text="How many customers?")
    assert turn.status == "completed"
    assert {
        "sql__list_tables",
        "sql__describe_table",
        "sql__query",
        "sql__explain",
        "time__get_current_time",
    } <= offered(model)
    [result] = await tool_results(turn)
    assert result["ok"] and "| n |" in result["result"] and "| 60 |" in result["result"]
    tool_message = model.last_messages[-1]
    assert tool_message["role"] == "tool" and "| 60 |" in tool_message["content"]


async def test_a_refused_write_comes_back_as_a_tool_error(mcp_host, make_session, run_turn, model):
    session = await make_session(mode="data-analysis", execution="agent")
    model.reply("", tool_calls=[("sql__query", {"sql": "DELETE FROM orders"})])
    model.reply("I cannot change data.")
    turn = await run_turn(session, text="Delete the orders")
    [result] = await tool_results(turn)
    assert not result["ok"] and "not authorized" in result["error"]
    assert turn.status == "completed"


async def test_ask_never_offers_mcp_tools(mcp_host, make_session, run_turn, model):
    session = await make_session(mode="data-analysis", execution="ask")
    model.reply("Ask answers without MCP.")
    turn = await run_turn(session)
    assert turn.status == "completed" and model.calls == 1
    assert not any("__" in name for name in offered(model))


async def test_policy_and_toggles_filter_the_servers_tools(mcp_host, make_session, run_turn, model):
    general = await make_session(mode="general", execution="agent")  # policy: time.* but no sql
    model.reply("ok")
    await run_turn(general)
    assert "time__get_current_time" in offered(model) and not any(n.startswith("sql__") for n in offered(model))

    ddr = await AgentMode.objects.aget(key="ddr-authoring")  # policy: time.get_current_time only
    names = select_tools(policy=ddr.tool_policy, toggles={}, execution="agent").kinds
    assert "time__get_current_time" in names and "time__convert_time" not in names
    everything = select_tools(policy=["*"], toggles={"sql__explain": False}, execution="agent").kinds
    assert {"sql__query", "time__convert_time"} <= set(everything) and "sql__explain" not in everything
    server_off = select_tools(policy=["*"], toggles={"sql": False}, execution="agent").kinds
    assert not any(n.startswith("sql__") for n in server_off) and "time__convert_time" in server_off


async def test_offline_model_answers_a_data_question_with_a_chart(
    mcp_host, make_session, run_turn, monkeypatch, settings, tmp_path
):
    """The embedded default: DB query → transform → image → final answer."""
    settings.MEDIA_ROOT = tmp_path
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    offline = build_llm_client()
    assert offline.is_offline
    session = await make_session(mode="data-analysis", execution="agent")
    turn = await run_turn(session, text="What was the revenue by month?", reasoner=Reasoner(llm=offline))
    await offline.client.close()
    assert turn.status == "completed", turn.error
    results = await tool_results(turn)
    names = [r["name"] for r in results]
    assert "sql__query" in names and names[-1] == "image_gen" and all(r["ok"] for r in results)
    query = next(r for r in results if r["name"] == "sql__query")
    assert query["result"].count("\n| 2025-") == 12  # one row per month of the demo year
    image = json.loads(results[-1]["result"])
    assert image["kind"] in {"bar", "line"} and (tmp_path / image["url"].removeprefix("/media/")).is_file()
    assert image["url"] in turn.answer
    events = [e.type async for e in turn.events.order_by("seq")]
    assert events.count("step.started") == turn.step_count >= 3
    assert await sync_to_async(lambda: turn.model_label)() == "offline"
