"""Each user's credentials for MCP servers: OAuth token sets and named secrets, encrypted at rest
(sealing.py, APTIX_SECRETS_KEY), and the audit trail of connecting and disconnecting (models.py).
Nothing here knows MCP: tools/mcp/ asks for a user's credentials of a server by its name."""
