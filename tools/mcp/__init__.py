"""The MCP client side: the host that runs the servers of mcp.json for this process and serves their
tools through the MCP registry (tools/registry.py).

config.py      mcp.json: parse and validate the `mcpServers` (or VS Code `servers`) entries
envfile.py     JSON that refuses duplicated keys, and the dotenv files of `envFile`
host.py        McpHost (one background thread and loop), start_mcp_host(), mcp_status(), reload/restart
reload.py      what a reload changes, and the file poll that lets `manage.py mcp_reload` reach a host
publisher.py   a server's tools kept in step with the MCP registry
logs.py        a server's MCP log messages and stderr: to the log, and the last lines kept
supervisor.py  one server's life: connect, list and publish its tools, restart with backoff
connection.py  an initialised client session over stdio or streamable HTTP
transport.py   the stdio transport for a server child process
entry.py       an MCP tool as an entry of the MCP registry (`<server>__<tool>`)
sql_server.py  only the entry point `python -m tools.mcp.sql_server <url>`; the server is tools/sql_mcp/
"""
