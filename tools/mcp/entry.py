"""MCP tools as entries of the MCP registry: the agent tool contract (tools/base.py) over a server's
tool, named `<server>__<tool>`, with the server's description, input schema and annotations, and
the server as this process runs it (`server_port`, a ServerPort: its transport, whether it acts as
each user, waiting for it to start), which the host hands each entry (host.py HostedServer)."""

from __future__ import annotations

import asyncio
import copy
import json
import re
from typing import Protocol

import mcp_types as types

from tools.base import CallContext, InvokeResult, ToolContext
from tools.registry import TOOL_NAME_RE

from .config import TOOL_SEPARATOR
from .connection import Progress
from .rich import RichResult, store_attachments

_INVALID_NAME_CHARS = re.compile(r"[^a-zA-Z0-9_-]")
MAX_TOOL_NAME = 64  # what model APIs accept (tools.registry.TOOL_NAME_RE)


class ServerPort(Protocol):
    """An MCP server as the host of this process runs it, by name: what its tools' entries (and a
    caller waiting for a server still starting: tools.registry `server()`) need of it."""

    @property
    def name(self) -> str: ...

    @property
    def transport(self) -> str | None:
        """ "stdio", "http" or "sse" as it runs now; None once it is not configured any more."""
        ...

    @property
    def per_user(self) -> bool:
        """Whether it acts as each user (a connection per user, with their credentials)."""
        ...

    def starting(self) -> bool: ...

    async def wait_ready(self) -> bool:
        """Wait (from any loop) while it is starting; whether it is ready then."""
        ...

    def missing_credentials(self, user_id: int) -> tuple[str, ...]:
        """What `user_id` has not given a server that acts as each user (off the event loop)."""
        ...

    async def call_tool(
        self, tool: str, name: str, arguments: dict, context: CallContext, on_progress: Progress | None
    ) -> InvokeResult:
        """Call its tool `tool` (`name`: the registry's) from any loop; progress goes to `on_progress`
        on the host's loop."""
        ...


def registry_name(server: str, tool: str) -> str | None:
    """`<server>__<tool>`, with characters the model API refuses (MCP allows e.g. ".") replaced by
    "_"; None when the result is too long to be a tool name."""
    name = f"{server}{TOOL_SEPARATOR}{_INVALID_NAME_CHARS.sub('_', tool)}"
    return name if TOOL_NAME_RE.match(name) else None


class McpToolEntry:
    """One tool of one MCP server. Calls go to the server's live session on the MCP host."""

    is_tool_fully_executed_on_server = True

    def __init__(self, *, server: str, tool: types.Tool, name: str, port: ServerPort) -> None:
        self.TOOL_NAME = name
        self.server = server
        self.label = name.removeprefix(f"{server}{TOOL_SEPARATOR}")  # the sanitised tool name
        self.tool = tool
        self.annotations = tool.annotations
        self.read_only = bool(tool.annotations and tool.annotations.read_only_hint)
        self.TOOL_USAGE_METADATA = usage_text(server, tool)
        self._schema = {
            "type": "function",
            "function": {"name": name, "description": describe(tool), "parameters": parameters(tool)},
        }
        self.server_port = port

    def get_schema(self) -> dict:
        return copy.deepcopy(self._schema)

    def same_definition(self, tool: types.Tool) -> bool:
        return self.tool.model_dump(mode="json") == tool.model_dump(mode="json")

    async def execute(self, arguments_json: str | None, context: ToolContext | None) -> InvokeResult:
        return await self.execute_with_progress(arguments_json, context, None)

    async def execute_with_progress(
        self, arguments_json: str | None, context: ToolContext | None, on_progress: Progress | None
    ) -> InvokeResult:
        """`execute`, with the server's progress notifications for this call passed to `on_progress`
        on the caller's loop. The context goes whole to the server's connection (a ToolContext
        without the MCP parts, or None, asks nobody and watches no task); images and files of the
        result are stored for its session."""
        try:
            arguments = json.loads(arguments_json) if arguments_json and arguments_json.strip() else {}
        except ValueError as exc:
            return InvokeResult.from_error(f'The arguments for MCP tool "{self.TOOL_NAME}" are not valid JSON ({exc}).')
        if not isinstance(arguments, dict):
            return InvokeResult.from_error(f'The arguments for MCP tool "{self.TOOL_NAME}" must be a JSON object.')
        relay = None
        if on_progress is not None:
            loop = asyncio.get_running_loop()

            def relay(progress: float, total: float | None, message: str | None) -> None:
                loop.call_soon_threadsafe(on_progress, progress, total, message)

        call = CallContext.of(context)
        result = await self.server_port.call_tool(self.tool.name, self.TOOL_NAME, arguments, call, relay)
        if isinstance(result, RichResult):
            result = await asyncio.to_thread(store_attachments, result, call.session_id)
        return result


def describe(tool: types.Tool) -> str:
    return (tool.description or tool.title or f'The MCP tool "{tool.name}".').strip()


def usage_text(server: str, tool: types.Tool) -> str:
    """One line for the system prompt: what the tool does and what its annotations promise."""
    first_line = describe(tool).splitlines()[0].strip().rstrip(".")
    hints = []
    annotations = tool.annotations
    if annotations and annotations.read_only_hint:
        hints.append("read-only")
    elif annotations and annotations.destructive_hint:
        hints.append("may change or delete data")
    hints.append(f'MCP server "{server}"')
    return f"{first_line} ({', '.join(hints)})."


def parameters(tool: types.Tool) -> dict:
    """The MCP input schema (JSON Schema) as function parameters: kept as is, as an object schema."""
    schema = copy.deepcopy(tool.input_schema) if isinstance(tool.input_schema, dict) else {}
    schema["type"] = "object"
    if not isinstance(schema.get("properties"), dict):
        schema["properties"] = {}
    return schema
