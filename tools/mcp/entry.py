"""MCP tools as entries of the MCP registry: the agent tool contract (tools/base.py) over a server's
tool, named `<server>__<tool>`, with the server's description, input schema and annotations, and
the server as this process runs it (`server_port`, a ServerPort: its transport, whether it acts as
each user, waiting for it to start), which the host hands each entry (host.py HostedServer)."""

from __future__ import annotations

import asyncio
import copy
import json
import re
from dataclasses import replace
from typing import Protocol

import mcp_types as types

from tools.base import CallContext, InvokeResult, ToolContext
from tools.registry import TOOL_NAME_RE

from .apps import AppResource, NotAnApp, app_uri, store_app
from .config import TOOL_SEPARATOR
from .connection import Progress
from .rich import RichResult, store_attachments

_INVALID_NAME_CHARS = re.compile(r"[^a-zA-Z0-9_-]")
MAX_TOOL_NAME = 64  # what model APIs accept (tools.registry.TOOL_NAME_RE)
TOOL_KEYS = ("name", "title", "description", "inputSchema")  # what an MCP App is told of its tool


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

    @property
    def apps(self) -> bool:
        """Whether its tools' MCP Apps are shown (mcp.json "apps")."""
        ...

    async def read_app(self, uri: str, user_id: int | None) -> AppResource:
        """Its MCP App at `uri` (apps.py), from any loop; NotAnApp saying why it cannot be shown."""
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
        self.app_uri = app_uri(tool)  # its MCP App's ui:// resource (apps.py), shown after its result
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

        port = self.server_port
        showing = self.app_uri is not None and port.apps
        call = CallContext.of(context, keep=showing)
        result = await port.call_tool(self.tool.name, self.TOOL_NAME, arguments, call, relay)
        if isinstance(result, RichResult):
            result = await asyncio.to_thread(store_attachments, result, call.session_id)
        return await self._with_app(result, arguments, call.user_id) if showing else result

    async def _with_app(self, result: InvokeResult, arguments: dict, user_id: int | None) -> InvokeResult:
        """`result` with its MCP App (apps.py) for the card: the server, the tool, its input and the
        result as sent, and the app's HTML kept in storage (its sha256) with what its resource declares;
        why it cannot be shown, instead, when it cannot."""
        assert self.app_uri is not None
        sent = (result.view or {}).get("result")
        if sent is None:  # the call failed before the server answered
            sent = {"content": [{"type": "text", "text": result.error_message or ""}], "isError": True}
        tool = {
            key: value for key, value in self.tool.model_dump(mode="json", by_alias=True).items() if key in TOOL_KEYS
        }
        view: dict = {"server": self.server, "tool": tool, "input": arguments, "result": sent}
        try:
            app = await self.server_port.read_app(self.app_uri, user_id)
            view.update(app.declared(), sha256=await asyncio.to_thread(store_app, app))
        except NotAnApp as exc:
            view.update(uri=self.app_uri, error=str(exc))
        return replace(result, view=view)


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
