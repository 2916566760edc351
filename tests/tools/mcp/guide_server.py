"""An MCP server with `instructions` (from GUIDE_INSTRUCTIONS, else a default), one tool and the
logging capability, over stdio: the instructions and handshake tests start it."""

from __future__ import annotations

import os

from mcp.server.mcpserver import MCPServer

DEFAULT = "Always greet politely. Call greet before anything else."

server = MCPServer("guide", instructions=os.environ.get("GUIDE_INSTRUCTIONS", DEFAULT))


@server.tool()
def greet(name: str) -> str:
    """Greet someone."""
    return f"Hello, {name}!"


if __name__ == "__main__":
    server.run()
