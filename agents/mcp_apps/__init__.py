"""MCP Apps in the conversation (docs/mcp.md#mcp-apps): a tool's app shown after its result, what
the app may do (call its own server's tools under the approval policy, read its resources, send a
message as the user once they confirm, give the model context), and the audit of all of it
(AppAction). The protocol half is tools/mcp/apps.py; the views are agents/web/apps.py."""
