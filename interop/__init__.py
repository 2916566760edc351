"""Aptix served to other agents: the MCP server at /mcp/ (mcp_server/) and the A2A agent at /a2a/ with
its card at /.well-known/agent-card.json (a2a/). Programs reach the user's modes and conversations
here with the user's API token; every turn is the user's own, run through the same services as the
JSON API (agents/web/api.py), so the same modes, tools, approvals, quotas and rate limits apply.
progress.py follows a running turn's events for both (a streamed task, progress notifications)."""
