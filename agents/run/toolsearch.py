"""The tools built per turn in a run (tools/base.py BuiltPerTurn: the tool search, whose catalog is the
allowed tools the request does not carry; the resources' reader), the tools a search found offered
from the next step on, and the tools earlier turns of the session found, remembered for its next
turns (derived from their tool.result events, so nothing else is stored). Which tool searches is
what it declares (FindsTools), never its name."""

from __future__ import annotations

from typing import Any

from asgiref.sync import sync_to_async
from django.conf import settings

from tools.base import BuiltPerTurn, FindsTools
from tools.registry import ToolRegistry, internal_tool, tools_with

from ..models import TurnEvent
from ..state import PausedState
from .pipeline import turn_tools

REMEMBERED_SEARCHES = 20  # the session's latest search results read for a new turn


def per_turn_tool(name: str, state: PausedState, mcp: ToolRegistry) -> Any | None:
    """The turn's instance of the internal tool `name` if it is one built per turn (None otherwise):
    built from what the turn offers now (a search finds the on-demand tools not offered yet)."""
    tool = internal_tool(name)
    if not isinstance(tool, BuiltPerTurn):
        return None
    offered_mcp = [n for n, kind in state.kinds.items() if kind == "mcp"]
    return tool.for_turn(
        turn_tools([n for n in state.on_demand if n not in state.kinds], [*state.on_demand, *offered_mcp], mcp)
    )


def found_by(name: str, result: str) -> list[str]:
    """The tools a successful result of the tool `name` found, if it is a tool that finds tools."""
    tool = internal_tool(name)
    return tool.found_names(result) if isinstance(tool, FindsTools) else []


def offer_tools(state: PausedState, names: list[str], mcp: ToolRegistry) -> list[str]:
    """Offer these on-demand tools from the next step on (for the rest of the turn), while the request
    stays within APTIX_MAX_TOOLS; returns the names added (`found_by` reads them off a search's result)."""
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
    """The tools the session's earlier searches found, newest first, each once."""
    finders = dict(tools_with(FindsTools))
    if before_index <= 1 or not finders:
        return []
    events = (
        TurnEvent.objects.filter(
            turn__session_id=session_id,
            turn__index__lt=before_index,
            type="tool.result",
            payload__name__in=list(finders),
        )
        .order_by("-turn__index", "-seq")
        .only("payload")[:REMEMBERED_SEARCHES]
    )
    names: list[str] = []
    for event in events:
        payload: dict[str, Any] = event.payload
        finder = finders.get(payload.get("name") or "")
        if payload.get("ok") and finder is not None:
            names += [n for n in finder.found_names(payload.get("result") or "") if n not in names]
    return names
