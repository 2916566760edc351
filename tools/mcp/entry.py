"""MCP tools as entries of the MCP registry: the agent tool contract (tools/base.py) over a server's
tool, named `<server>__<tool>`, with the server's description, input schema and annotations."""

from __future__ import annotations

import asyncio
import copy
import json
import re
from collections.abc import Awaitable, Callable

import mcp_types as types

from tools.base import InvokeResult, ToolContext
from tools.registry import TOOL_NAME_RE

from .config import TOOL_SEPARATOR
from .elicitation import in_call
from .rich import RichResult, describe_blocks, rich_result, store_attachments
from .rich import describe_block as describe_content

# Calls the named MCP tool of the entry's server with these arguments, from any event loop; the
# server's progress notifications go to `on_progress` (called on the host's loop).
Invoke = Callable[..., Awaitable[InvokeResult]]
# (progress, total, message): what a `notifications/progress` of a call says
Progress = Callable[[float, float | None, str | None], None]

_INVALID_NAME_CHARS = re.compile(r"[^a-zA-Z0-9_-]")
MAX_TOOL_NAME = 64  # what model APIs accept (tools.registry.TOOL_NAME_RE)


def registry_name(server: str, tool: str) -> str | None:
    """`<server>__<tool>`, with characters the model API refuses (MCP allows e.g. ".") replaced by
    "_"; None when the result is too long to be a tool name."""
    name = f"{server}{TOOL_SEPARATOR}{_INVALID_NAME_CHARS.sub('_', tool)}"
    return name if TOOL_NAME_RE.match(name) else None


class McpToolEntry:
    """One tool of one MCP server. Calls go to the server's live session on the MCP host."""

    is_tool_fully_executed_on_server = True

    def __init__(self, *, server: str, tool: types.Tool, name: str, invoke: Invoke) -> None:
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
        self._invoke = invoke

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
        on the caller's loop. Images and files of the result are stored for the context's session."""
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

        with in_call(self.server):  # a server asking the user during the call finds the caller
            result = await self._invoke(self.tool.name, self.TOOL_NAME, arguments, on_progress=relay)
        if isinstance(result, RichResult):
            session = getattr(context, "session_id", None)
            result = await asyncio.to_thread(store_attachments, result, session)
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


def format_result(result: types.CallToolResult, name: str) -> InvokeResult:
    """Text content joined, other content described briefly (a RichResult keeps it for the card and
    the model: rich.py); structured content when there is no content at all. A tool-side error
    (is_error) becomes a tool error with the server's text."""
    if not result.content and result.structured_content is not None:
        text = json.dumps(result.structured_content, ensure_ascii=False)
        return InvokeResult.from_error(text) if result.is_error else InvokeResult.create(text)
    if result.is_error:
        text = "\n".join(describe_content(block) for block in result.content)
        return InvokeResult.from_error(text or f'MCP tool "{name}" failed without a message.')
    return rich_result(*describe_blocks(result.content))
