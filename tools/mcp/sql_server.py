"""`python -m tools.mcp.sql_server <database-url>`: the command that runs our read-only SQL MCP
server, as written in mcp.json files (ours and users'). Kept as a stable entry point; the server
itself lives in tools/sql_mcp/ (`python -m tools.sql_mcp <database-url>` runs the same thing).

This module only forwards to tools.sql_mcp.server.main; the MCP host (the rest of tools/mcp/)
never imports it.
"""

from __future__ import annotations

import sys

from tools.sql_mcp.server import main

__all__ = ["main"]

if __name__ == "__main__":
    sys.exit(main())
