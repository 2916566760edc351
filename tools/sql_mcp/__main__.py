"""`python -m tools.sql_mcp <database-url>`: run the read-only SQL MCP server over stdio (server.py)."""

from __future__ import annotations

import sys

from tools.sql_mcp.server import main

if __name__ == "__main__":
    sys.exit(main())
