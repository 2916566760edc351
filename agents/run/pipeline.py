"""AGN-011 request construction: per-turn mode normalisation (§3.3) and the tool list, selected
once before the loop starts (§4). Spec 004 §4: internal tools in Ask and Agent, MCP tools only in
Agent; the mode's tool policy and the session's toggles filter; agent_change_mode always stays."""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings

from tools.builtin.mode_change import ModeChangeTool
from tools.mcp.config import TOOL_SEPARATOR
from tools.registry import ToolRegistry, internal_registry, mcp_registry

logger = logging.getLogger("aptix.pipeline")

ALWAYS_ON = ModeChangeTool.TOOL_NAME  # TUL-007 §3.1: no mode, policy or toggle removes it
MCP_SEPARATOR = TOOL_SEPARATOR  # an MCP tool is named <server>__<tool>
CURRENT_MODE_RE = re.compile(r"^Current mode: .*$", re.MULTILINE)

BASE_PROMPT = (
    "You are Aptix, a team's assistant. Follow the mode below and answer in Markdown. Use tools only when "
    "they help; never invent their results."
)
# Said only when agent_change_mode is not offered (a model without tools); otherwise its usage says it.
SWITCH_PROPOSAL = (
    "If another mode clearly fits better, propose it and ask: (1) stay in the current mode, (2) switch this "
    "session, (3) switch and start a new session."
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
    """The tools of one turn. `kinds` maps each offered name to "internal", "mcp" or "client";
    `allowed` counts what the policy and toggles allowed, `left_out` names what the tool budget
    (APTIX_MAX_TOOLS) kept out of the request."""

    schemas: list[dict] = field(default_factory=list)
    kinds: dict[str, str] = field(default_factory=dict)
    usage: dict[str, str] = field(default_factory=dict)
    allowed: int = 0
    left_out: list[str] = field(default_factory=list)

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
    server_order: list[str] | None = None,
    max_tools: int | None = None,
) -> ToolSelection:
    """The turn's tools: allowed by the policy and the toggles, then cut to the tool budget in the
    order of `budget_order`. Client tools (AGN-011 §4.3) are appended, never removed, and count."""
    registry = mcp if mcp is not None else mcp_registry
    candidates: list[tuple[str, Any, str]] = [
        (name, tool, "internal")
        for name, tool in internal_registry()
        if policy_allows(policy, name) and toggle_allows(toggles, name)
    ]
    if execution == "agent":
        candidates += [
            (name, tool, "mcp")
            for name, tool in registry
            if policy_allows(policy, name) and toggle_allows(toggles, name)
        ]
    budget = (max_tools or settings.APTIX_MAX_TOOLS) - len(client_tools or [])
    kept, left_out = budget_order([c[0] for c in candidates], policy, server_order or mcp_server_order(), budget)
    by_name = {name: (tool, kind) for name, tool, kind in candidates}
    selection = ToolSelection(allowed=len(candidates) + len(client_tools or []), left_out=left_out)
    for name in kept:
        tool, kind = by_name[name]
        selection.add(tool.get_schema(), kind, getattr(tool, "TOOL_USAGE_METADATA", ""))
    for schema in client_tools or []:
        selection.add(schema, "client")
    return selection


def budget_order(
    names: list[str], policy: list[str], server_order: list[str], budget: int
) -> tuple[list[str], list[str]]:
    """(kept, left out) of the allowed tool `names` under a budget of `budget` schemas. Kept first:
    agent_change_mode, the internal tools, the MCP tools the policy names one by one, then the other
    MCP tools server by server in the config's order (by name within a server). Deterministic, so
    the panel and the turn agree; the list stays fixed for the turn (AGN-011 §4.4)."""
    named = set(policy or [])
    rank = {server: i for i, server in enumerate(server_order)}

    def key(name: str) -> tuple:
        if name == ALWAYS_ON:
            return (0,)
        if MCP_SEPARATOR not in name:
            return (1, name)
        server, _, tool = name.partition(MCP_SEPARATOR)
        if f"{server}.{tool}" in named:
            return (2, rank.get(server, len(rank)), server, tool)
        return (3, rank.get(server, len(rank)), server, tool)

    ordered = sorted(names, key=key)
    cut = max(budget, 1)  # agent_change_mode always goes
    kept = set(ordered[:cut])
    return [n for n in names if n in kept], ordered[cut:]


def mcp_server_order() -> list[str]:
    """This process's MCP servers in the config's order (empty when none run here)."""
    from tools.mcp.host import mcp_status

    return [status.name for status in mcp_status()]


def build_system_prompt(*, mode, execution: str, selection: ToolSelection) -> str:
    """The base prompt, the mode's prompt and the tools' usage guidance, each rule said once: the mode
    switch rule lives in agent_change_mode's usage, and a usage text that only repeats the tool's
    schema description (an MCP tool's: its description and a parenthesised note of its annotations,
    which the approval flow acts on) is left out, since the schema already goes with the request."""
    parts = [
        BASE_PROMPT,
        f"Current mode: {mode.key}\nExecution: {execution}",
        f"# Mode: {mode.display_name}\n{mode.system_prompt or mode.description}",
    ]
    if ALWAYS_ON not in selection.kinds:
        parts.append(SWITCH_PROPOSAL)
    described = {
        schema["function"]["name"]: (schema["function"].get("description") or "").strip()
        for schema in selection.schemas
    }
    guidance = []
    for name, text in selection.usage.items():
        said = next(iter(described.get(name, "").splitlines()), "").strip().rstrip(".")
        if said and text.startswith(said) and re.fullmatch(r"\s*(\(.*\))?\.?\s*", text[len(said) :]):
            continue
        guidance.append(f"- {name}: {text}")
    if guidance:
        parts.append("# Tools\n" + "\n".join(guidance))
    return "\n\n".join(parts)


def with_current_mode(system_prompt: str, mode: str) -> str:
    """The system prompt after a mode change in the turn: its "Current mode:" line follows."""
    return CURRENT_MODE_RE.sub(f"Current mode: {mode}", system_prompt, count=1)
