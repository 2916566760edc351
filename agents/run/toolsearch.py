"""Tool search in a run: the `tool_search` instance of a turn (its catalog: the allowed tools the
request does not carry), the found tools offered from the next step on, and the tools earlier turns
of the session found, remembered for its next turns (derived from their tool.result events, so
nothing else is stored)."""

from __future__ import annotations

from typing import Any

from asgiref.sync import sync_to_async
from django.conf import settings

from tools.builtin.tool_search import Found, ToolSearchTool, found_names
from tools.registry import ToolRegistry

from ..models import TurnEvent
from ..state import PausedState
from .pipeline import MCP_SEPARATOR, TOOL_SEARCH

REMEMBERED_SEARCHES = 20  # the session's latest tool_search results read for a new turn


def search_tool(state: PausedState, mcp: ToolRegistry) -> ToolSearchTool:
    """This turn's tool_search: it finds the on-demand tools not offered yet."""
    catalog = []
    for name in state.on_demand:
        tool = mcp.get(name)
        if tool is None or name in state.kinds:
            continue
        description = (tool.get_schema()["function"].get("description") or "").strip()
        server = name.partition(MCP_SEPARATOR)[0] if MCP_SEPARATOR in name else ""
        catalog.append(Found(name=name, server=server, description=next(iter(description.splitlines()), "")))
    return ToolSearchTool(catalog, limit=settings.APTIX_TOOL_SEARCH_RESULTS)


def offer_tools(state: PausedState, names: list[str], mcp: ToolRegistry) -> list[str]:
    """Offer these on-demand tools from the next step on (for the rest of the turn), while the request
    stays within APTIX_MAX_TOOLS; returns the names added. `found_names` reads a tool_search result's."""
    added = []
    for name in names:
        tool = mcp.get(name)
        if tool is None or name in state.kinds or name not in state.on_demand:
            continue
        if len(state.tools) >= settings.APTIX_MAX_TOOLS:
            break
        state.tools.append(tool.get_schema())
        state.kinds[name] = "mcp"
        added.append(name)
    return added


@sync_to_async
def remembered_tools(session_id: str, before_index: int) -> list[str]:
    """The tools the session's earlier tool_search calls found, newest first, each once."""
    if before_index <= 1:
        return []
    events = (
        TurnEvent.objects.filter(
            turn__session_id=session_id, turn__index__lt=before_index, type="tool.result", payload__name=TOOL_SEARCH
        )
        .order_by("-turn__index", "-seq")
        .only("payload")[:REMEMBERED_SEARCHES]
    )
    names: list[str] = []
    for event in events:
        payload: dict[str, Any] = event.payload
        if payload.get("ok"):
            names += [n for n in found_names(payload.get("result") or "") if n not in names]
    return names
