"""Budgets for real models: beyond APTIX_MAX_TOOLS tool schemas per request the pinned tools go out
(in a fixed order) with tool_search, then whole MCP servers in the config's order while they fit (a
server is never cut partway), the others on demand, and the trace, Tools panel and catalog admin
say so, with 330 tools from three real MCP server processes; tool results cut for the model with a
marker, kept longer in the trace."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import ClassVar

import pytest

from agents.run.pipeline import budget_order, plan_offer, select_tools
from agents.run.reasoner import Reasoner
from agents.web.toolpanel import tool_panel
from modes.models import AgentMode
from tests.helpers import async_db
from tests.helpers.events import events_of
from tools.base import InvokeResult, function_schema
from tools.mcp.host import McpHost
from tools.registry import ToolRegistry, internal_registry, mcp_registry, needs_project_knowledge, needs_session_files

pytestmark = pytest.mark.slow  # real subprocesses (servers, workers, web processes)

MANY = Path(__file__).resolve().parents[2] / "tools" / "mcp" / "many_tools_server.py"
SERVERS = ("alpha", "beta", "gamma")  # the config's order
# The internal tools a session without files is offered (the files tools wait for a file).
INTERNAL = len([name for name, tool in internal_registry() if not needs_session_files(tool)])
FILES_TOOLS = len(list(internal_registry())) - INTERNAL
# What a session with no files, in no project, is offered of them (knowledge_search needs a project).
OFFERED = len(
    [n for n, tool in internal_registry() if not needs_session_files(tool) and not needs_project_knowledge(tool)]
)


@pytest.fixture(scope="module")
def many_tools(tmp_path_factory):
    """Three real stdio MCP servers with 110 tools each (330), in a registry of their own."""
    config = tmp_path_factory.mktemp("mcp") / "mcp.json"
    servers = {name: {"command": sys.executable, "args": [str(MANY), "110"]} for name in SERVERS}
    config.write_text(json.dumps({"mcpServers": servers}))
    registry = ToolRegistry("mcp")
    host = McpHost(config, registry=registry)
    host.start()
    host.wait_until_sync(lambda statuses: all(s.state == "ready" for s in statuses), 60)
    yield registry
    host.stop()


def test_budget_order_keeps_mode_change_internal_named_then_servers_in_config_order():
    names = ["image_gen", "b__x", "a__z", "agent_change_mode", "a__y", "b__w", "agent_list_modes"]
    kept, left_out = budget_order(names, ["*", "b.w"], ["b", "a"], budget=5)
    assert kept == ["image_gen", "b__x", "agent_change_mode", "b__w", "agent_list_modes"]  # request order kept
    assert left_out == ["a__y", "a__z"]
    kept, left_out = budget_order(names, ["*"], [], budget=1)
    assert kept == ["agent_change_mode"]
    assert left_out == ["agent_list_modes", "image_gen", "a__y", "a__z", "b__w", "b__x"]


FILESYSTEM = [  # the tools of @modelcontextprotocol/server-filesystem
    "create_directory", "directory_tree", "edit_file", "get_file_info", "list_allowed_directories",
    "list_directory", "list_directory_with_sizes", "move_file", "read_file", "read_media_file",
    "read_multiple_files", "read_text_file", "search_files", "write_file",
]  # fmt: skip


def test_a_server_is_offered_whole_or_found_on_demand_never_cut_partway():
    """A budget of 13 schemas once did offer 11 of the filesystem server's 14 tools, cut by name
    (write_file, read_text_file and search_files dropped, the deprecated read_file kept), and left the
    next server out altogether. Now each server is offered whole, in the config's order, when it fits,
    and tool_search finds the tools of one that does not."""
    internal = ["agent_change_mode", "image_gen"]
    fs = [f"fs__{tool}" for tool in FILESYSTEM]
    time = ["time__get_current_time", "time__convert_time"]
    tokens = dict.fromkeys([*internal, *fs, *time], 10)
    for policy in (["*"], [f"fs.{tool}" for tool in FILESYSTEM] + ["time.get_current_time", "time.convert_time"]):
        offered, on_demand, left_out = plan_offer(tokens, policy, ["fs", "time"], max_tools=14)
        assert offered == internal + time
        assert on_demand == fs and left_out == []
    offered, on_demand, _ = plan_offer(tokens, ["*"], ["time", "fs"], max_tools=20)  # room for both
    assert offered == internal + fs + time and on_demand == []


def test_whole_servers_fill_the_room_in_config_order_after_the_remembered_tools():
    tokens = {"agent_change_mode": 10, "a__1": 10, "a__2": 10, "b__1": 10, "b__2": 10, "b__3": 10, "c__1": 10}
    offered, on_demand, _ = plan_offer(tokens, ["*"], ["b", "a", "c"], max_tools=6, remembered=["c__1"])
    assert offered == ["agent_change_mode", "b__1", "b__2", "b__3", "c__1"]  # b first; a no longer fits
    assert on_demand == ["a__1", "a__2"]
    offered, on_demand, _ = plan_offer(tokens, ["*"], ["b", "a", "c"], max_tools=5, remembered=["c__1"])
    assert offered == ["agent_change_mode", "a__1", "a__2", "c__1"]  # b does not fit whole; a, next, does
    assert on_demand == ["b__1", "b__2", "b__3"]


def test_330_mcp_tools_offer_whole_servers_in_config_order_and_the_rest_on_demand(many_tools):
    """330 allowed tools exceed APTIX_MAX_TOOLS: the request carries the pinned tools (every internal
    tool, the MCP tool the policy names), tool_search, and alpha's 110 tools, the first server in the
    config that fits whole; beta's and the rest of gamma's 219 are on demand."""
    selection = select_tools(
        policy=["*", "gamma.tool_109"], toggles={}, execution="agent", mcp=many_tools, server_order=list(SERVERS)
    )
    assert selection.allowed == OFFERED + 330
    offered = set(selection.names)
    alpha = {f"alpha__tool_{i:03d}" for i in range(110)}
    internal = {
        name
        for name, tool in internal_registry()
        if not needs_session_files(tool) and not needs_project_knowledge(tool)
    }
    assert offered == internal | {"gamma__tool_109", "tool_search"} | alpha
    assert len(selection.on_demand) == 219 and "beta__tool_000" in selection.on_demand
    assert not any(name.startswith("alpha__") for name in selection.on_demand)
    assert selection.left_out == []
    again = select_tools(
        policy=["*", "gamma.tool_109"], toggles={}, execution="agent", mcp=many_tools, server_order=list(SERVERS)
    )
    assert again.names == selection.names and again.on_demand == selection.on_demand  # deterministic


@async_db
async def test_an_agent_turn_finds_a_tool_and_the_trace_says_what_is_on_demand(
    make_session, run_turn, model, llm, many_tools
):
    await AgentMode.objects.filter(key="general").aupdate(tool_policy=["*"])
    session = await make_session(execution="agent")
    model.reply("", tool_calls=[("tool_search", {"query": "beta tool 7"})])
    model.reply("", tool_calls=[("beta__tool_007", {})])
    model.reply("Done.")
    reasoner = Reasoner(llm=llm, mcp=many_tools)
    turn = await run_turn(session, "Use a tool", reasoner=reasoner)
    assert turn.status == "completed"
    first = [t["function"]["name"] for t in model.requests[0]["tools"]]
    assert "tool_search" in first and "beta__tool_007" not in first and len(first) == OFFERED + 1 + 110
    assert "alpha__tool_007" in first  # alpha, first in the config, fits whole
    assert "beta__tool_007" in [t["function"]["name"] for t in model.requests[1]["tools"]]
    assert "tool_007" in model.last_messages[-1]["content"]  # the real server answered
    [started] = await events_of(turn, "turn.started")
    assert started["tools_allowed"] == OFFERED + 330 and len(started["tools_on_demand"]) == 220
    assert started["tools_left_out"] == []


class HugeResultTool:
    TOOL_USAGE_METADATA = "Dump everything."
    is_tool_fully_executed_on_server = True
    TOOL_NAME = "db__dump"
    read_only = True
    annotations = None
    size: ClassVar[int] = 5_000_000

    @staticmethod
    def get_schema():
        return function_schema("db__dump", "Dump.", {})

    async def execute(self, arguments_json, context):
        return InvokeResult.create("x" * self.size)


@async_db
async def test_a_5_mb_result_reaches_the_model_cut_with_a_marker(make_session, run_turn, model, settings):
    await AgentMode.objects.filter(key="general").aupdate(tool_policy=["*"])
    mcp_registry.register(HugeResultTool())
    try:
        session = await make_session(execution="agent")
        model.reply("", tool_calls=[("db__dump", {})])
        model.reply("That is a lot.")
        turn = await run_turn(session, "Dump it")
    finally:
        mcp_registry.unregister("db__dump")
    sent = model.last_messages[-1]["content"]
    limit = settings.APTIX_TOOL_RESULT_CHARS
    assert sent.startswith("x" * limit) and "x" * (limit + 1) not in sent
    assert "it is 5,000,000 characters and you got the first 40,000" in sent and "asking for less" in sent
    [result] = await events_of(turn, "tool.result")
    assert result["size"] == 5_000_000 and result["cut_for_model"] == limit
    assert len(result["result"]) == settings.APTIX_TOOL_RESULT_STORE_CHARS
    assert turn.status == "completed"


class StandInTool:
    TOOL_USAGE_METADATA = "A stand-in."
    is_tool_fully_executed_on_server = True
    read_only = True
    annotations = None

    def __init__(self, name: str) -> None:
        self.TOOL_NAME = name

    def get_schema(self):
        return function_schema(self.TOOL_NAME, "A stand-in.", {})

    async def execute(self, arguments_json, context):
        return InvokeResult.create("ok")


@pytest.fixture
def ten_mcp_tools(settings):
    """Ten MCP tools in the process's registry and a budget three above the internal tools."""
    settings.APTIX_MAX_TOOLS = INTERNAL + 3
    names = [f"box__t{i}" for i in range(10)]
    for name in names:
        mcp_registry.register(StandInTool(name))
    yield names
    for name in names:
        mcp_registry.unregister(name)


@pytest.mark.django_db
def test_the_tools_panel_says_which_tools_are_on_demand(team_a, alice, ten_mcp_tools, client, password):
    from django.urls import reverse

    from agents.sessions import session_create

    AgentMode.objects.filter(key="general").update(tool_policy=["*"])
    session = session_create(team=team_a, user=alice, execution="agent")
    panel = tool_panel(session)
    assert panel["budget"]["allowed"] == OFFERED + 10 and panel["budget"]["offered"] == OFFERED
    assert panel["budget"]["on_demand"] == ten_mcp_tools and panel["budget"]["left_out"] == []
    rows = {row.name: row for group in panel["servers"] for row in group.tools}
    assert all(rows[name].on_demand and not rows[name].blocked for name in ten_mcp_tools)
    client.login(username=alice.username, password=password)
    page = client.get(reverse("session-detail", args=[session.id])).content.decode()
    assert f"{OFFERED + 10} tools allowed, {OFFERED} offered, 10 on demand" in page
    assert "on demand (found with tool_search)" in page


@pytest.mark.django_db
def test_the_catalog_admin_warns_when_a_policy_exceeds_the_budget(client, curator, password, ten_mcp_tools):
    from django.urls import reverse

    from tests.helpers import mode_admin_form

    client.login(username=curator.username, password=password)
    mode = AgentMode.objects.get(key="general")
    response = client.post(
        reverse("admin:modes_agentmode_change", args=[mode.pk]), mode_admin_form(mode, tool_policy="*"), follow=True
    )
    text = response.content.decode()
    # The catalog counts every tool the policy allows, the files tools included.
    allowed = INTERNAL + FILES_TOOLS + 10
    assert f"tool policy allows {allowed} tools; a request carries at most {INTERNAL + 3}" in text
    assert "box__t9" in text and "10 are on demand in Agent turns, found by the model with tool_search" in text
