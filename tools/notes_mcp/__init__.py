"""A tiny demo MCP server that writes: a notes file, one line per note. It is in the shipped mcp.json
(server "notes") so the approval card for a tool that is not read-only can be seen: `add_note` asks
the user before it runs, `list_notes` is read-only and runs at once (DESIGN.md "Consent and
approvals").

    python -m tools.notes_mcp <path-to-notes-file>

server.py     the MCP server: its two tools and main()

Nothing here imports Django or the MCP host, and this file imports nothing, so starting the server
stays fast.
"""
