"""A published MCP App server: the ext-apps project's basic example (npm
`@modelcontextprotocol/server-basic-vanillajs`), run by node over stdio. Its one tool `get-time`
(not read-only) comes with the app ui://get-time/mcp-app.html, built with the official App SDK:
"Get Server Time" calls `get-time` from the app, "Send Message" asks the host to send its text as the
user's. Installed as the everything server is (tests/helpers/npm.py)."""

from __future__ import annotations

from .npm import CACHE, npm_installed

PACKAGE = "@modelcontextprotocol/server-basic-vanillajs"
VERSION = "2.0.3"  # its app's buttons and texts, which the browser test reads


def basic_app_server() -> dict:
    """Its mcp.json entry (stdio)."""
    entry = npm_installed(
        PACKAGE,
        VERSION,
        "dist/index.js",
        prefix=CACHE / "server-basic-vanillajs" / VERSION,
        what="the MCP Apps example server basic-vanillajs",
    )
    return {"command": "node", "args": [str(entry), "--stdio"]}
