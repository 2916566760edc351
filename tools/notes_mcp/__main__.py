"""`python -m tools.notes_mcp <path-to-notes-file>`: run the demo notes MCP server over stdio (server.py)."""

from __future__ import annotations

import sys

from tools.notes_mcp.server import main

if __name__ == "__main__":
    sys.exit(main())
