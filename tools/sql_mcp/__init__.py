"""Our read-only SQL MCP server: a process of its own, spoken to over stdio by the MCP host (tools/mcp/).

    python -m tools.mcp.sql_server <database-url>    the command in mcp.json files (tools/mcp/sql_server.py)
    python -m tools.sql_mcp <database-url>           the same server

server.py     the MCP server: its four tools, the text they return, main()
backends.py   open_backend(url): the backend a database URL names
base.py       the Backend protocol, its result types and errors, shared by the backends
sqlite.py     the SQLite backend
postgres.py   the PostgreSQL backend (psycopg, imported only for a PostgreSQL URL)

Imports flow one way: server -> backends -> sqlite, postgres -> base. Nothing here imports Django
or the MCP host, and this file imports nothing, so starting the server stays fast.
"""
