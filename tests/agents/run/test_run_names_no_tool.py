"""The run names no tool (docs/architecture.md): what a tool needs of the run is a capability the tool
declares (tools/base.py: ChangesMode, WritesDocument, FindsTools, BuiltPerTurn, ALWAYS_OFFERED), and
the run finds tools through the registry. So agents/run imports no module of tools.builtin, reads no
tool's TOOL_NAME and spells no tool's name, in code or prose."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from tools.base import BuiltPerTurn, ChangesMode, FindsTools, WritesDocument
from tools.registry import always_offered, internal_names, per_turn_registry, tools_with

RUN = Path(__file__).resolve().parents[3] / "agents" / "run"


def naming(source: str, names: list[str]) -> list[str]:
    """What in `source` names a tool: an import of tools.builtin, a read of TOOL_NAME, or a tool's name."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("tools.builtin"):
            found.append(f"imports {node.module}")
        elif isinstance(node, ast.Import):
            found += [f"imports {a.name}" for a in node.names if a.name.startswith("tools.builtin")]
        elif isinstance(node, ast.Attribute) and node.attr == "TOOL_NAME":
            found.append("reads TOOL_NAME")
    spelled = re.compile(r"(?<![\w-])(" + "|".join(map(re.escape, names)) + r")(?![\w-])")
    found += [f"names {m.group(1)}" for m in spelled.finditer(source)]
    return found


def test_the_run_names_no_tool():
    names = internal_names()
    assert "agent_change_mode" in names and "tool_search" in names  # the registry's, built and per turn
    modules = sorted(RUN.glob("*.py"))
    assert len(modules) > 20  # the walk found the run
    offending = {p.name: found for p in modules if (found := naming(p.read_text(), names))}
    assert offending == {}, "declare a capability of the tool (tools/base.py) instead"


def test_the_check_can_fail():
    names = ["tool_search", "agent_change_mode"]
    assert naming("from tools.builtin.mode_change import ModeChangeTool\n", names) == [
        "imports tools.builtin.mode_change"
    ]
    assert naming("import tools.builtin.tool_search\n", names) == [
        "imports tools.builtin.tool_search",
        "names tool_search",
    ]
    assert naming("x = tool.TOOL_NAME\n", names) == ["reads TOOL_NAME"]
    assert naming('"""Offered when tool_search finds it."""\n', names) == ["names tool_search"]
    assert naming("# the_tool_search_x and tool_searches\n", names) == []


def test_the_run_finds_tools_by_what_they_declare():
    assert always_offered() == {"agent_change_mode"}
    assert [name for name, _tool in tools_with(ChangesMode)] == ["agent_change_mode"]
    assert [name for name, _tool in tools_with(WritesDocument)] == ["document_write"]
    assert [name for name, _tool in tools_with(FindsTools)] == ["tool_search"]
    assert all(isinstance(tool, BuiltPerTurn) for _name, tool in per_turn_registry())
    assert per_turn_registry().names() == ["tool_search", "mcp_read_resource"]
