"""Aptix served to other agents: the MCP server at /mcp/ (mcp_server/). Programs reach the user's
modes and conversations here with the user's API token; every turn is the user's own, run through the
same services as the JSON API (agents/web/api.py), so the same modes, tools, approvals, quotas and
rate limits apply."""
