"""`mcp_read_resource` {"uri"}: reads a resource of an MCP server the turn may use (McpHost.read_resource).

Offered in Agent turns whenever an allowed MCP server lists resources (agents/run/pipeline.py), and
built per turn with those servers (agents/run/tool_calls.py), as `tool_search` is: only URIs such a
server lists, or a template of it fits, are read; any other is refused (no arbitrary fetches). A
server that acts as each user reads it over the connection of the context's user."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterable
from typing import Any, ClassVar

from ..base import CallContext, InvokeResult, ToolContext, TurnTools, function_schema

TOOL_NAME = "mcp_read_resource"


class ReadResourceTool:
    TOOL_NAME: ClassVar[str] = TOOL_NAME
    TOOL_USAGE_METADATA: ClassVar[str] = (
        "Read a resource of an MCP server by its URI (one the servers list, or a resource link a tool "
        "returned); text comes back as text, images as images."
    )
    is_tool_fully_executed_on_server = True

    def __init__(self, servers: Iterable[str] = ()) -> None:
        self.servers = tuple(servers)

    @staticmethod
    def offered(turn: TurnTools) -> bool:
        """Offered when a server of the turn's MCP tools lists resources (tools/base.py BuiltPerTurn)."""
        return bool(turn.resource_servers)

    @classmethod
    def for_turn(cls, turn: TurnTools) -> ReadResourceTool:
        """The turn's instance: it reads from the turn's servers only."""
        return cls(turn.resource_servers)

    @staticmethod
    def get_schema() -> dict[str, Any]:
        return function_schema(
            TOOL_NAME,
            ReadResourceTool.TOOL_USAGE_METADATA,
            {"uri": {"type": "string", "description": "The resource's URI, e.g. file:///notes/today.md"}},
            ["uri"],
        )

    async def execute(self, arguments_json: str | None, context: ToolContext | None) -> InvokeResult:
        from tools.mcp import RichResult, mcp_host, store_attachments

        try:
            arguments = json.loads(arguments_json or "{}")
        except ValueError:
            arguments = None
        uri = arguments.get("uri") if isinstance(arguments, dict) else None
        if not isinstance(uri, str) or not uri.strip():
            return InvokeResult.from_error('mcp_read_resource needs {"uri": "<the resource URI>"}.')
        host = mcp_host()
        if host is None:
            return InvokeResult.from_error("No MCP servers run here.")
        call = CallContext.of(context)
        result = await host.read_resource(uri.strip(), self.servers, user_id=call.user_id)
        if isinstance(result, RichResult):
            result = await asyncio.to_thread(store_attachments, result, call.session_id)
        return result
