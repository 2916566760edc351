"""The tool selector of a session (spec 004 §5): internal tools and MCP tools grouped by server,
each with whether the next turn will offer it and, if not, why. It reads the same rules the
pipeline applies (policy_allows and the toggles), so what the panel says is what the turn does."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from django.conf import settings

from agents.llm.catalog import model_for
from agents.models import Execution
from agents.run.pipeline import MCP_SEPARATOR, plan_offer, policy_allows, schema_tokens
from agents.selectors import mode_get
from agents.web.connections import Connection, connect_url, user_connections
from files.services import session_has_files
from modes.validators import KNOWLEDGE_NONE, KNOWLEDGE_PROJECT
from projects.scopes import mode_knowledge_scope, searchable_projects
from tools.mcp import McpToolEntry, ServerStatus, mcp_config_error, mcp_status
from tools.registry import (
    always_offered,
    internal_registry,
    mcp_registry,
    needs_project_knowledge,
    needs_session_files,
)

if TYPE_CHECKING:
    from agents.models import AgentSession


@dataclass
class ToolRow:
    name: str  # the registry name: what a toggle is keyed by
    label: str
    description: str
    enabled: bool  # the session's toggle
    always: bool = False
    blocked: str = ""  # why the next turn will not offer it although it is enabled, if so
    original: str = ""  # the MCP server's own name for the tool, when sanitising changed it
    on_demand: bool = False  # allowed, but the request carries it only once tool_search found it
    outside_policy: bool = False  # the mode does not offer it: its box is unticked and cannot be ticked
    app: bool = False  # an MCP tool shown with its interactive app after its result (tools/mcp/apps.py)

    @property
    def offered(self) -> bool:
        return self.always or (self.enabled and not self.blocked)


@dataclass
class ServerGroup:
    name: str
    state: str
    status: str
    enabled: bool
    tools: list[ToolRow] = field(default_factory=list)
    dropped: tuple[tuple[str, str], ...] = ()  # tools the server offers that cannot be offered, with why
    connection: Connection | None = None  # a server that acts as each user: the session user's connection
    connect_url: str = ""
    resources: tuple[Any, ...] = ()  # its resources and URI templates (tools/mcp/resources.py)

    @property
    def outside_policy(self) -> bool:
        """The mode offers none of its tools: the server is said to be not offered in this mode."""
        return bool(self.tools) and all(row.outside_policy for row in self.tools)


def _mcp_status() -> dict[str, ServerStatus]:
    return {s.name: s for s in mcp_status()}


def tool_panel(session: AgentSession) -> dict:
    mode = mode_get(key=session.mode)
    policy = mode.tool_policy if mode else []
    toggles = session.tool_toggles or {}
    label = mode.display_name if mode else session.mode

    def policy_reason(name: str) -> str:
        return "" if policy_allows(policy, name) else f"not in the {label} mode's tool policy"

    internal = []
    has_files: bool | None = None
    knowledge: bool | None = None
    for name, tool in internal_registry():
        always = name in always_offered()
        blocked = "" if always else policy_reason(name)
        if needs_project_knowledge(tool):  # whatever the policy says, in a project whose documents it may search
            scope = mode_knowledge_scope(mode)
            knowledge = bool(searchable_projects(session, scope)) if knowledge is None else knowledge
            blocked = "" if knowledge else _knowledge_reason(scope, label)
        elif not blocked and needs_session_files(tool):
            has_files = session_has_files(session.pk) if has_files is None else has_files
            blocked = "" if has_files else "offered once the session has files"
        internal.append(
            ToolRow(
                name=name,
                label=name,
                description=tool.TOOL_USAGE_METADATA,
                always=always,
                enabled=always or toggles.get(name) is not False,
                blocked=blocked,
                outside_policy=not always and not needs_project_knowledge(tool) and bool(policy_reason(name)),
            )
        )

    ask = session.execution == Execution.ASK
    statuses = _mcp_status()
    groups = _server_groups(statuses, toggles, policy_reason)
    for connection in user_connections(session.user_id):  # Connect / connected as … / Disconnect
        if (group := groups.get(connection.server)) is not None:
            group.connection, group.connect_url = connection, connect_url(connection.server)
    context = model_for(session_model=session.model, mode_model=mode.model if mode else "").context_tokens
    budget = _budget(session, policy, internal, groups, server_order=list(statuses), context_tokens=context)
    return {
        "budget": budget,
        "internal": internal,
        "servers": sorted(groups.values(), key=lambda g: g.name),
        "mcp_disabled": "MCP tools run only in Agent mode; switch to Agent to use them." if ask else "",
        "mcp_config_error": mcp_config_error(),
        "mode_label": label,
    }


def _server_groups(
    statuses: dict[str, ServerStatus], toggles: dict, policy_reason: Callable[[str], str]
) -> dict[str, ServerGroup]:
    """One group per MCP server (its status, the tools it could not offer) with its registry tools."""
    groups: dict[str, ServerGroup] = {}
    for name, status in statuses.items():
        groups[name] = ServerGroup(
            name=name,
            state=status.state,
            status=status.describe(),
            enabled=toggles.get(name) is not False,
            dropped=status.dropped,
            resources=status.resources,
        )
    for name, tool in mcp_registry:
        server, _, short = name.partition(MCP_SEPARATOR)
        group = groups.setdefault(
            server, ServerGroup(name=server, state="unknown", status="", enabled=toggles.get(server) is not False)
        )
        blocked = outside = policy_reason(name)
        if not blocked and not group.enabled:
            blocked = f"the {server} server is switched off"
        group.tools.append(
            ToolRow(
                name=name,
                label=short,
                description=tool.get_schema()["function"]["description"],
                enabled=toggles.get(name) is not False,
                blocked=blocked,
                original=_original_name(tool, short),
                outside_policy=bool(outside),
                app=isinstance(tool, McpToolEntry) and tool.app_uri is not None and tool.server_port.apps,
            )
        )
    return groups


def _original_name(tool, label: str) -> str:
    """The server's name for an MCP tool when it differs from the label (e.g. "a.b" shown as "a_b")."""
    original = tool.tool.name if isinstance(tool, McpToolEntry) else label
    return original if original != label else ""


def _budget(
    session: AgentSession,
    policy: list[str],
    internal: list[ToolRow],
    groups: dict,
    *,
    server_order: list[str],
    context_tokens: int | None,
) -> dict:
    """The tools as the next turn offers them (pipeline.plan_offer): rows found only through tool_search
    are marked on demand, rows not even that reaches are blocked, and the panel says "315 tools allowed,
    8 offered, 307 on demand"."""
    rows = [row for row in internal if row.offered]
    if session.execution == Execution.AGENT:
        rows += [row for group in groups.values() for row in group.tools if row.offered]
    tokens = {}
    for row in rows:
        tool = internal_registry().get(row.name) or mcp_registry.get(row.name)
        tokens[row.name] = schema_tokens([tool.get_schema()]) if tool is not None else 0
    _, on_demand, left_out = plan_offer(
        tokens, policy, server_order, max_tools=settings.APTIX_MAX_TOOLS, context_tokens=context_tokens
    )
    cut, found = set(left_out), set(on_demand)
    for row in rows:
        if row.name in cut:
            row.blocked = f"over the tool budget (APTIX_MAX_TOOLS = {settings.APTIX_MAX_TOOLS})"
        row.on_demand = row.name in found
    return {
        "allowed": len(rows),
        "offered": len(rows) - len(cut) - len(found),
        "left_out": left_out,
        "on_demand": on_demand,
    }


def _knowledge_reason(scope: object, label: str) -> str:
    """Why knowledge_search is not offered: the mode searches no knowledge, or none it names is the user's."""
    if scope == KNOWLEDGE_NONE:
        return f"the {label} mode searches no knowledge"
    if scope == KNOWLEDGE_PROJECT:
        return "offered in a project's sessions"
    return f"offered where the {label} mode's knowledge projects are yours"
