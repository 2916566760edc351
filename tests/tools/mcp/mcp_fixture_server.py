"""A small MCP server for the MCP host tests: over stdio with `python tests/tools/mcp/mcp_fixture_server.py`,
over streamable HTTP in-process with `server.streamable_http_app()`."""

from __future__ import annotations

import asyncio
import os
import sys
import warnings

import anyio
from mcp import MCPDeprecationWarning
from mcp.server.mcpserver import Context, MCPServer
from mcp_types import ToolAnnotations

server = MCPServer("fixture")


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def echo(text: str) -> str:
    """Return the text unchanged."""
    return text


@server.tool()
def noop() -> str:
    """Do nothing."""
    return ""


@server.tool()
async def sleep(seconds: float, started_fifo: str = "") -> str:
    """Sleep, then say so. With `started_fifo`, first write to that FIFO, so a test knows the call
    is in progress without guessing."""
    if started_fifo:
        await anyio.Path(started_fifo).write_text("started")
    await asyncio.sleep(seconds)
    return f"slept {seconds}"


@server.tool()
def crash() -> str:
    """Exit the server process at once, without answering."""
    os._exit(3)


@server.tool()
def env(name: str) -> str:
    """The value of an environment variable of the server process."""
    return os.environ.get(name, "")


@server.tool()
def header(name: str, ctx: Context) -> str:
    """The value of a header of the HTTP request that carried this call (streamable HTTP only)."""
    return ctx.request_context.request.headers.get(name, "")


@server.tool()
def fail() -> str:
    """Fail on the server side."""
    raise ValueError("the fixture was asked to fail")


@server.tool()
async def add_tool(name: str, ctx: Context) -> str:
    """Register a new tool `name` and tell the client its tool list changed."""

    def added() -> str:
        return f"{name} was added at runtime"

    server.add_tool(added, name=name, description="A tool added at runtime.")
    await ctx.notify_tools_changed()  # 2026-07-28 clients: on their subscriptions/listen stream
    await ctx.session.send_tool_list_changed()  # handshake-era clients: a plain notification
    return "added"


@server.tool()
async def log(level: str, text: str, ctx: Context) -> str:
    """Send `text` as an MCP log message (notifications/message) at `level`, and write it to stderr."""
    print(f"stderr says: {text}", file=sys.stderr, flush=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MCPDeprecationWarning)  # logging is deprecated in 2026-07-28
        await ctx.log(level, text, logger_name="fixture.worker")
    return "logged"


if __name__ == "__main__":
    if gate := os.environ.get("FIXTURE_START_GATE"):  # a FIFO: start once the test opens it for writing
        with open(gate) as fifo:
            fifo.read()
    server.run()
