"""AGN-011 request construction: per-turn mode normalisation (§3.3) and the tool list, selected
once before the loop starts (§4). Spec 004 §4: internal tools in Ask and Agent, MCP tools only in
Agent; the mode's tool policy and the session's toggles filter; the mode change tool always stays (ALWAYS_OFFERED)."""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings

from tools.base import FindsTools, ToolSummary, TurnTools
from tools.mcp import TOOL_SEPARATOR, instructions_prompt
from tools.registry import (
    ToolRegistry,
    always_offered,
    internal_registry,
    mcp_registry,
    needs_project_knowledge,
    needs_session_files,
    per_turn_registry,
    tools_with,
)

logger = logging.getLogger("aptix.pipeline")

SCHEMA_CHARS_PER_TOKEN = 3.5  # the schema share is estimated, so the Tools panel and the turn agree
MCP_SEPARATOR = TOOL_SEPARATOR  # an MCP tool is named <server>__<tool>
CURRENT_MODE_RE = re.compile(r"^Current mode: .*$", re.MULTILINE)

BASE_PROMPT = (
    "You are Aptix, a team's assistant. Follow the mode below and answer in Markdown. Use tools only when "
    "they help; never invent their results."
)
# Said only when the mode change tool is not offered (a model without tools); otherwise its usage says it.
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
    name `<server>__<tool>`; policy entries are '*', an internal tool's name, 'sql.*' or 'time.get_current_time'."""
    if name in always_offered():  # TUL-007 §3.1: the mode change
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
    if name in always_offered():
        return True
    toggles = toggles or {}
    if toggles.get(name) is False:
        return False
    return not (MCP_SEPARATOR in name and toggles.get(name.partition(MCP_SEPARATOR)[0]) is False)


@dataclass
class ToolSelection:
    """The tools of one turn. `kinds` maps each offered name to "internal", "mcp" or "client";
    `allowed` counts what the policy and toggles allowed; `on_demand` names the allowed tools the
    request does not carry but the tool search finds; `left_out` what not even that reaches (pinned
    tools beyond APTIX_MAX_TOOLS)."""

    schemas: list[dict] = field(default_factory=list)
    kinds: dict[str, str] = field(default_factory=dict)
    usage: dict[str, str] = field(default_factory=dict)
    allowed: int = 0
    left_out: list[str] = field(default_factory=list)
    on_demand: list[str] = field(default_factory=list)

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
    context_tokens: int | None = None,
    remembered: list[str] | None = None,
    session_has_files: bool = False,
    knowledge: bool = False,
) -> ToolSelection:
    """The turn's tools: allowed by the policy and the toggles; when they do not fit (plan_offer), the
    pinned ones, the tool search and the `remembered` tools earlier searches found while they fit. Client
    tools (AGN-011 §4.3) are appended, never removed, and count. The files tools come only when the
    session has files (`session_has_files`); the knowledge tools only when the session's project knowledge
    may be searched (`knowledge`), and then whatever the policy says."""
    registry = mcp if mcp is not None else mcp_registry
    candidates: list[tuple[str, Any, str]] = [
        (name, tool, "internal")
        for name, tool in internal_registry()
        if (knowledge if needs_project_knowledge(tool) else policy_allows(policy, name))
        and toggle_allows(toggles, name)
        and (session_has_files or not needs_session_files(tool))
    ]
    if execution == "agent":
        candidates += [
            (name, tool, "mcp")
            for name, tool in registry
            if policy_allows(policy, name) and toggle_allows(toggles, name)
        ]
    by_name = {name: (tool, kind, tool.get_schema()) for name, tool, kind in candidates}
    kept, on_demand, left_out = plan_offer(
        {name: schema_tokens([entry[2]]) for name, entry in by_name.items()},
        policy,
        server_order or mcp_server_order(),
        max_tools=max_tools or settings.APTIX_MAX_TOOLS,
        context_tokens=context_tokens,
        client_tokens=schema_tokens(client_tools or []),
        client_count=len(client_tools or []),
        remembered=remembered or [],
    )
    selection = ToolSelection(allowed=len(candidates) + len(client_tools or []), left_out=left_out, on_demand=on_demand)
    for name in kept:
        tool, kind, schema = by_name[name]
        selection.add(schema, kind, getattr(tool, "TOOL_USAGE_METADATA", ""))
    turn = turn_tools(on_demand, [name for name, _tool, kind in candidates if kind == "mcp"], registry)
    for _name, per_turn in per_turn_registry():  # tool search when some are on demand, resources' reader
        if per_turn.offered(turn):  # each is BuiltPerTurn (checked when registered)
            selection.add(per_turn.get_schema(), "internal", per_turn.TOOL_USAGE_METADATA)
    for schema in client_tools or []:
        selection.add(schema, "client")
    return selection


def schema_tokens(schemas: list[dict]) -> int:
    """Tokens tool schemas take in a request, estimated from their JSON (deterministic and cheap)."""
    return int(len(json.dumps(schemas)) / SCHEMA_CHARS_PER_TOKEN) + 1 if schemas else 0


def is_pinned(name: str, policy: list[str]) -> bool:
    """Offered even when the tools do not fit: the mode change tool, the internal tools, and the MCP tools
    the policy names one by one (`sql.query`)."""
    if MCP_SEPARATOR not in name:
        return True
    server, _, tool = name.partition(MCP_SEPARATOR)
    return f"{server}.{tool}" in set(policy or [])


def plan_offer(
    tokens: dict[str, int],
    policy: list[str],
    server_order: list[str],
    *,
    max_tools: int,
    context_tokens: int | None = None,
    client_tokens: int = 0,
    client_count: int = 0,
    remembered: list[str] | None = None,
) -> tuple[list[str], list[str], list[str]]:
    """(offered, on demand, left out) of the allowed tools (`tokens`: name → its schema's tokens, in
    request order). Everything is offered when the schemas take at most APTIX_TOOL_SCHEMA_SHARE of the
    context and the count is within `max_tools`. Otherwise the pinned tools are (cut to the budget in
    `budget_order`, one place kept for the tool search), then the `remembered` ones, newest first, then
    whole MCP servers in the config's order, each only if all its tools fit what the count and the
    share leave; the others are on demand. Only internal tools beyond the budget are left out:
    the tool search finds MCP tools alone."""
    share = settings.APTIX_TOOL_SCHEMA_SHARE * (context_tokens or settings.APTIX_CONTEXT_TOKENS)
    names = list(tokens)
    if len(names) + client_count <= max_tools and sum(tokens.values()) + client_tokens <= share:
        return names, [], []
    pinned = [n for n in names if is_pinned(n, policy)]
    searchers = [tool.get_schema() for _name, tool in tools_with(FindsTools)]
    budget = max_tools - client_count - len(searchers)  # the tool search takes one place
    kept, cut = budget_order(pinned, policy, server_order, budget)
    chosen = set(kept)
    used = sum(tokens[n] for n in kept) + client_tokens + schema_tokens(searchers)
    for name in remembered or []:
        if name in tokens and name not in chosen and not is_pinned(name, policy):
            if len(chosen) >= budget or used + tokens[name] > share:
                break
            chosen.add(name)
            used += tokens[name]
    for group in server_groups([n for n in names if n not in chosen and n not in cut], server_order):
        if len(chosen) + len(group) <= budget and used + sum(tokens[n] for n in group) <= share:
            chosen.update(group)
            used += sum(tokens[n] for n in group)
    left_out = [n for n in cut if MCP_SEPARATOR not in n]
    on_demand = [n for n in names if n not in chosen and n not in left_out]
    return [n for n in names if n in chosen], on_demand, left_out


def server_groups(names: list[str], server_order: list[str]) -> list[list[str]]:
    """The MCP tools among `names` by server: servers in the config's order (then by name), each
    server's tools in `names`' order."""
    groups: dict[str, list[str]] = {}
    for name in names:
        if MCP_SEPARATOR in name:
            groups.setdefault(name.partition(MCP_SEPARATOR)[0], []).append(name)
    rank = {server: i for i, server in enumerate(server_order)}
    return [groups[server] for server in sorted(groups, key=lambda server: (rank.get(server, len(rank)), server))]


def budget_order(
    names: list[str], policy: list[str], server_order: list[str], budget: int
) -> tuple[list[str], list[str]]:
    """(kept, left out) of the allowed tool `names` under a budget of `budget` schemas. Kept first:
    the mode change tool, the internal tools, the MCP tools the policy names one by one, then the other
    MCP tools; MCP tools go server by server in the config's order, each server's (named, or other)
    tools whole or not at all: a server is never cut partway. Deterministic, so the panel and the turn
    agree; the list stays fixed for the turn (AGN-011 §4.4)."""
    named = set(policy or [])
    rank = {server: i for i, server in enumerate(server_order)}
    always = always_offered()

    def key(name: str) -> tuple:
        if name in always:
            return (0,)
        if MCP_SEPARATOR not in name:
            return (1, name)
        server, _, tool = name.partition(MCP_SEPARATOR)
        if f"{server}.{tool}" in named:
            return (2, rank.get(server, len(rank)), server, tool)
        return (3, rank.get(server, len(rank)), server, tool)

    units: list[list[str]] = []  # what is kept or cut as one: an internal tool, or a server's tools
    for name in sorted(names, key=key):
        kind = key(name)
        if kind[0] >= 2 and units and key(units[-1][0])[:3] == kind[:3]:
            units[-1].append(name)
        else:
            units.append([name])
    room = max(budget, 1)  # the mode change tool always goes
    kept: set[str] = set()
    cut: list[str] = []
    for unit in units:
        if len(kept) + len(unit) <= room:
            kept.update(unit)
        else:
            cut += unit
    return [n for n in names if n in kept], cut


def mcp_server_order() -> list[str]:
    """This process's MCP servers in the config's order (empty when none run here)."""
    from tools.mcp import mcp_status

    return [status.name for status in mcp_status()]


def resource_servers(mcp_names: Iterable[str]) -> list[str]:
    """The servers of these MCP tools that list resources here (the resources' reader may read them)."""
    from tools.mcp import mcp_status

    servers = {name.partition(TOOL_SEPARATOR)[0] for name in mcp_names}
    return [status.name for status in mcp_status() if status.name in servers and status.resources]


def turn_tools(on_demand: Iterable[str], mcp_names: Iterable[str], mcp: ToolRegistry) -> TurnTools:
    """What the tools built per turn learn of it: the MCP tools of `on_demand` (allowed, not in the
    request) as a search lists them, and the servers of `mcp_names` that list resources."""
    summaries = []
    for name in on_demand:
        tool = mcp.get(name)
        if tool is None:
            continue
        description = (tool.get_schema()["function"].get("description") or "").strip()
        server = name.partition(MCP_SEPARATOR)[0] if MCP_SEPARATOR in name else ""
        summaries.append(ToolSummary(name=name, server=server, description=next(iter(description.splitlines()), "")))
    return TurnTools(
        on_demand=tuple(summaries),
        resource_servers=tuple(resource_servers(mcp_names)),
        search_results=settings.APTIX_TOOL_SEARCH_RESULTS,
    )


def mcp_instructions(selection: ToolSelection) -> str:
    """The instructions of the MCP servers with a tool offered in this turn, in mcp.json order, each
    within APTIX_MCP_INSTRUCTIONS_CHARS (tools/mcp/handshake.py)."""
    from tools.mcp import mcp_status

    offered = {name for name, kind in selection.kinds.items() if kind == "mcp"}
    servers = [
        (status.name, status.handshake.instructions)
        for status in mcp_status()
        if status.handshake is not None and offered.intersection(status.tools)
    ]
    return instructions_prompt(servers, settings.APTIX_MCP_INSTRUCTIONS_CHARS)


def build_system_prompt(
    *, mode, execution: str, selection: ToolSelection, instructions: str = "", project_instructions: str = ""
) -> str:
    """The base prompt, the mode's prompt and the tools' usage guidance, each rule said once: the mode
    switch rule lives in the mode change tool's usage, and a usage text that only repeats the tool's
    schema description (an MCP tool's: its description and a parenthesised note of its annotations,
    which the approval flow acts on) is left out, since the schema already goes with the request.
    `project_instructions` (the session's project's instructions and files: loading.py) follow the mode's
    prompt; `instructions` (the MCP servers' own, `mcp_instructions`) come last."""
    parts = [
        BASE_PROMPT,
        f"Current mode: {mode.key}\nExecution: {execution}",
        f"# Mode: {mode.display_name}\n{mode.system_prompt or mode.description}",
    ]
    if project_instructions:
        parts.append(project_instructions)
    if not always_offered() & set(selection.kinds):  # the mode change's usage says the rule otherwise
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
    if instructions:
        parts.append(instructions)
    return "\n\n".join(parts)


def with_current_mode(system_prompt: str, mode: str) -> str:
    """The system prompt after a mode change in the turn: its "Current mode:" line follows."""
    return CURRENT_MODE_RE.sub(f"Current mode: {mode}", system_prompt, count=1)
