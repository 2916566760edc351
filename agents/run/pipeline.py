"""AGN-011 request construction: per-turn mode normalisation (§3.3) and the tool list, selected
once before the loop starts (§4). Spec 004 §4: internal tools in Ask and Agent, MCP tools only in
Agent; the mode's tool policy and the session's toggles filter; agent_change_mode always stays."""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field
from typing import Any

from tools.builtin.mode_change import ModeChangeTool
from tools.mcp.config import TOOL_SEPARATOR
from tools.registry import ToolRegistry, internal_registry, mcp_registry

logger = logging.getLogger("aptix.pipeline")

ALWAYS_ON = ModeChangeTool.TOOL_NAME  # TUL-007 §3.1: no mode, policy or toggle removes it
MCP_SEPARATOR = TOOL_SEPARATOR  # an MCP tool is named <server>__<tool>
CURRENT_MODE_RE = re.compile(r"^Current mode: .*$", re.MULTILINE)

BASE_PROMPT = (
    "You are Aptix, an assistant that works with a team inside a mode: a behavioural context chosen "
    "from the team's catalog. Follow the mode's instructions below. Answer in Markdown. Use tools "
    "only when they help; never invent tool results. If the request clearly belongs to another mode, "
    "propose it and ask whether the user wants to (1) stay in the current mode, (2) switch this "
    "session, or (3) switch and start a new session; change the mode only after the user agrees."
)


def normalize_turn_mode(*, session, requested_mode: str | None) -> str:
    """AGN-011 §3.3: a follow-up turn runs in the persisted mode, whatever the client sent."""
    requested = (requested_mode or "").strip().lower()
    if requested and requested != session.mode:
        logger.warning(
            "Client sent mode %r for session %s, which is in mode %r; using the persisted mode.",
            requested_mode,
            session.id,
            session.mode,
            extra={
                "event": "pipeline.mode_mismatch",
                "session_id": session.id,
                "requested_mode": requested_mode,
                "session_mode": session.mode,
            },
        )
    return session.mode


def policy_allows(policy: list[str], name: str) -> bool:
    """Does a mode's tool policy offer this tool? `name` is an internal tool name or an MCP tool
    name `<server>__<tool>`; policy entries are '*', 'image_gen', 'sql.*' or 'time.get_current_time'."""
    if name == ALWAYS_ON:
        return True
    entries = set(policy or [])
    if "*" in entries:
        return True
    if MCP_SEPARATOR in name:
        server, _, tool = name.partition(MCP_SEPARATOR)
        return f"{server}.*" in entries or f"{server}.{tool}" in entries
    return name in entries


def toggle_allows(toggles: dict[str, Any], name: str) -> bool:
    """Session toggles: a tool or a whole MCP server (`sql`) switched off is omitted."""
    if name == ALWAYS_ON:
        return True
    toggles = toggles or {}
    if toggles.get(name) is False:
        return False
    return not (MCP_SEPARATOR in name and toggles.get(name.partition(MCP_SEPARATOR)[0]) is False)


@dataclass
class ToolSelection:
    """The tools of one turn. `kinds` maps each offered name to "internal", "mcp" or "client"."""

    schemas: list[dict] = field(default_factory=list)
    kinds: dict[str, str] = field(default_factory=dict)
    usage: dict[str, str] = field(default_factory=dict)

    @property
    def names(self) -> list[str]:
        return list(self.kinds)

    def add(self, schema: dict, kind: str, usage: str = "") -> None:
        name = schema["function"]["name"]
        self.schemas.append(schema)
        self.kinds[name] = kind
        if usage:
            self.usage[name] = usage


def select_tools(
    *,
    policy: list[str],
    toggles: dict[str, Any],
    execution: str,
    client_tools: list[dict] | None = None,
    mcp: ToolRegistry | None = None,
) -> ToolSelection:
    selection = ToolSelection()
    for name, tool in internal_registry():
        if policy_allows(policy, name) and toggle_allows(toggles, name):
            selection.add(tool.get_schema(), "internal", tool.TOOL_USAGE_METADATA)
    if execution == "agent":
        for name, tool in mcp if mcp is not None else mcp_registry:
            if policy_allows(policy, name) and toggle_allows(toggles, name):
                selection.add(tool.get_schema(), "mcp", getattr(tool, "TOOL_USAGE_METADATA", ""))
    for schema in client_tools or []:  # AGN-011 §4.3: appended, never removed
        selection.add(schema, "client")
    return selection


def build_system_prompt(*, mode, execution: str, selection: ToolSelection) -> str:
    parts = [
        BASE_PROMPT,
        f"Current mode: {mode.key}\nExecution: {execution}",
        f"# Mode: {mode.display_name}\n{mode.system_prompt or mode.description}",
    ]
    if selection.usage:
        guidance = "\n".join(f"- {name}: {text}" for name, text in selection.usage.items())
        parts.append(f"# Tools\n{guidance}")
    return "\n\n".join(parts)


def with_current_mode(system_prompt: str, mode: str) -> str:
    """The system prompt after a mode change in the turn: its "Current mode:" line follows."""
    return CURRENT_MODE_RE.sub(f"Current mode: {mode}", system_prompt, count=1)
