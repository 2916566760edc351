"""The MCP server at /mcp/ (streamable HTTP, the official `mcp` SDK's server side).

- mount.py: the ASGI application in front of Django (aptix/asgi.py): `/mcp/` to the MCP server after
  the bearer token is checked, everything else to Django.
- server.py: the low-level MCP server: a tool `ask_<key>` per mode the token's user may use, the
  user's conversations as resources, each mode's example utterances as a prompt.
- services.py: what those handlers read and run, through the agents' services.
- approvals.py: a waiting turn's approvals asked back through the client (elicitation forms).
- calls.py: a call's turn while it runs: progress notifications, and the call's cancellation.
"""

from __future__ import annotations

from .mount import McpMount

__all__ = ["McpMount"]
