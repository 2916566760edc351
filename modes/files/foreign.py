"""Agents written for other tools, read as catalog entries: a VS Code custom agent (`*.agent.md`, or the
older `*.chatmode.md`) and a Claude Code subagent (`.claude/agents/*.md`).

Both are Markdown with front matter and the instructions as the body, like a mode file. What maps:
`name` (the mode key is made from it, slugified, and it is the display name), `description`, the body
(the system prompt) and the MCP tools in `tools` (VS Code `server/*` or `server/tool`, Claude Code
`mcp__server__tool` → `server.*` / `server.tool`). What does not is listed in the file's notes and
left out, never a failure: the editors' own tools (`editFiles`, `Read`, `Bash`, …) have no Aptix
equivalent, their model names are not this deployment's (`sonnet`, `Claude Sonnet 4 (copilot)`), and
`handoffs`, `color`, `permissionMode` and the like describe the editor. A field the file does not
set keeps the mode's current value (a new mode: the catalog's default), so importing a VS Code agent
over an existing mode changes only its name, description, prompt and the tools that map.
"""

from __future__ import annotations

import re
from typing import Any

from ..validators import TOOL_POLICY_ENTRY_RE
from .format import PROMPT, ModeFile, key_from_name
from .frontmatter import Document, FrontMatterError, Problem, parse

VSCODE_SUFFIXES = (".agent.md", ".chatmode.md")
# VS Code's own tool sets: "edit/editFiles" is a VS Code tool, not the tool of an MCP server "edit".
VSCODE_TOOL_SETS = frozenset(
    {"agent", "edit", "execute", "new", "read", "run", "search", "todo", "vscode", "web", "extensions"}
)
CLAUDE_MCP_TOOL = re.compile(r"^mcp__([A-Za-z0-9_-]+?)(?:__(.+))?$")
MAPPED_KEYS = frozenset({"name", "description", "tools", "model"})


def _stem(source: str) -> str:
    base = source.replace("\\", "/").rsplit("/", 1)[-1]
    for suffix in (*VSCODE_SUFFIXES, ".md"):
        if base.endswith(suffix):
            return base[: -len(suffix)]
    return base


def _tool_list(value: Any) -> list[str] | None:
    """A list of tool names from a YAML list or a comma-separated string; None when neither."""
    if isinstance(value, str):
        return [item.strip() for item in value.split(",") if item.strip()]
    if isinstance(value, list) and all(isinstance(item, str) for item in value):
        return [item.strip() for item in value if item.strip()]
    return None


def _vscode_tool(name: str) -> str | None:
    server, slash, tool = name.partition("/")
    if not slash or server in VSCODE_TOOL_SETS:
        return None
    entry = f"{server}.{tool}"
    return entry if TOOL_POLICY_ENTRY_RE.match(entry) else None


def _claude_tool(name: str) -> str | None:
    match = CLAUDE_MCP_TOOL.match(name)
    if match is None:
        return None
    entry = f"{match.group(1)}.{match.group(2) or '*'}"
    return entry if TOOL_POLICY_ENTRY_RE.match(entry) else None


def _read(source: str, text: str) -> tuple[Document | None, list[Problem]]:
    try:
        return parse(source, text), []
    except FrontMatterError as exc:
        return None, exc.problems


def read_vscode_agent(source: str, text: str) -> tuple[ModeFile | None, list[Problem]]:
    return _read_foreign(source, text, tool_of=_vscode_tool, tools_kind="VS Code", name_is_key=False)


def read_claude_subagent(source: str, text: str) -> tuple[ModeFile | None, list[Problem]]:
    return _read_foreign(source, text, tool_of=_claude_tool, tools_kind="Claude Code", name_is_key=True)


def _read_foreign(source: str, text: str, *, tool_of, tools_kind: str, name_is_key: bool):
    document, problems = _read(source, text)
    if document is None:
        return None, problems
    entries = document.entries
    notes: list[str] = []
    name_entry = entries.get("name")
    name = name_entry.value if name_entry is not None and isinstance(name_entry.value, str) else _stem(source)
    key = key_from_name(name)
    if not key:
        line = name_entry.line if name_entry is not None else 1
        return None, [Problem(source, line, "name", f"no mode key can be made from {name!r}")]
    display = name.replace("-", " ").strip().capitalize() if name_is_key else name.strip()
    mode_file = ModeFile(
        source=source,
        key=key,
        values={"key": key, "display_name": display[:120], PROMPT: document.body},
        complete=False,
    )
    if name_entry is not None:
        mode_file.lines["display_name"] = mode_file.lines["key"] = name_entry.line
    description = entries.get("description")
    if description is not None:
        if isinstance(description.value, str):
            mode_file.values["description"] = description.value.strip()
            mode_file.lines["description"] = description.line
        else:
            notes.append("description: not a string")
    tools = entries.get("tools")
    if tools is not None:
        names = _tool_list(tools.value)
        if names is None:
            notes.append("tools: neither a list nor a comma-separated string")
        else:
            mapped = [entry for entry in map(tool_of, names) if entry is not None]
            unmapped = [item for item in names if tool_of(item) is None]
            mode_file.values["tool_policy"] = list(dict.fromkeys(mapped))
            mode_file.lines["tool_policy"] = tools.line
            if unmapped:
                notes.append(f"tools {', '.join(unmapped)}: {tools_kind} tools with no Aptix equivalent")
    model = entries.get("model")
    if model is not None and model.value not in ("inherit", None, ""):
        notes.append(
            f"model {model.value!r}: not one of this deployment's model names; set the mode's model in the catalog"
        )
    others = [key_name for key_name in entries if key_name not in MAPPED_KEYS]
    if others:
        notes.append(f"{', '.join(others)}: no Aptix equivalent")
    mode_file.notes = [f"{source}: not mapped: {note}" for note in notes]
    return mode_file, []
