"""An MCP server with many tools, for the tool budget tests: `python many_tools_server.py <count>`
serves read-only tools `tool_000` … over stdio, each answering with its own name."""

from __future__ import annotations

import sys
from collections.abc import Callable

from mcp.server.mcpserver import MCPServer
from mcp_types import ToolAnnotations


def _answer(name: str) -> Callable[[], str]:
    def tool() -> str:
        return name

    return tool


def build(count: int) -> MCPServer:
    server = MCPServer("many")
    for i in range(count):
        name = f"tool_{i:03d}"
        server.tool(name=name, description=f"Tool number {i}.", annotations=ToolAnnotations(read_only_hint=True))(
            _answer(name)
        )
    return server


if __name__ == "__main__":
    build(int(sys.argv[1]) if len(sys.argv) > 1 else 110).run("stdio")
