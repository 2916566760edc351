"""The tools' guidance in the system prompt: each tool's usage metadata once, nothing the schemas
already carry (an MCP tool's usage line only repeats its description and annotations)."""

from __future__ import annotations

import mcp_types as types

from agents.run.pipeline import SWITCH_PROPOSAL, ToolSelection, build_system_prompt
from modes.models import AgentMode
from tools.builtin.image_gen import ImageGenTool
from tools.builtin.list_modes import AgentListModesTool
from tools.builtin.mode_change import ModeChangeTool
from tools.mcp.entry import McpToolEntry

MODE = AgentMode(key="data-analysis", display_name="Data Analysis", system_prompt="Analyse the data.")


def mcp_tool(name: str, description: str, **annotations) -> McpToolEntry:
    return McpToolEntry(
        server="sql",
        name=f"sql__{name}",
        port=None,  # never called
        tool=types.Tool(
            name=name,
            description=description,
            input_schema={"type": "object"},
            annotations=types.ToolAnnotations(**annotations) if annotations else None,
        ),
    )


def selection_of(*tools, kind="internal") -> ToolSelection:
    selection = ToolSelection()
    for tool in tools:
        selection.add(tool.get_schema(), kind, tool.TOOL_USAGE_METADATA)
    return selection


def test_each_internal_tools_usage_metadata_is_in_the_prompt_once():
    selection = selection_of(ModeChangeTool, AgentListModesTool, ImageGenTool)
    prompt = build_system_prompt(mode=MODE, execution="ask", selection=selection)
    for tool in (ModeChangeTool, AgentListModesTool, ImageGenTool):
        assert prompt.count(f"- {tool.TOOL_NAME}: {tool.TOOL_USAGE_METADATA}") == 1
        assert tool.get_schema()["function"]["description"] not in prompt
    assert SWITCH_PROPOSAL not in prompt  # agent_change_mode's usage says it


def test_mcp_usage_that_repeats_the_schema_description_is_left_out():
    query = mcp_tool("query", "Run one read-only statement.\nAt most 200 rows.", read_only_hint=True)
    drop = mcp_tool("drop_table", "Drop a table.", destructive_hint=True)
    selection = selection_of(ModeChangeTool)
    for entry in (query, drop):
        selection.add(entry.get_schema(), "mcp", entry.TOOL_USAGE_METADATA)
    prompt = build_system_prompt(mode=MODE, execution="agent", selection=selection)
    assert "Run one read-only statement" not in prompt and "sql__query" not in prompt
    assert "Drop a table" not in prompt
    assert "- agent_change_mode: " in prompt


def test_usage_that_adds_guidance_to_the_description_stays():
    class Search:
        TOOL_NAME = "search"
        TOOL_USAGE_METADATA = "Search the docs. Prefer it over guessing an API."

        @staticmethod
        def get_schema():
            return {"type": "function", "function": {"name": "search", "description": "Search the docs."}}

    prompt = build_system_prompt(mode=MODE, execution="ask", selection=selection_of(Search))
    assert "- search: Search the docs. Prefer it over guessing an API." in prompt


def test_without_agent_change_mode_the_prompt_still_says_how_to_propose_a_switch():
    prompt = build_system_prompt(mode=MODE, execution="ask", selection=ToolSelection())
    assert prompt.count("(1) stay in the current mode") == 1
    assert "# Tools" not in prompt
