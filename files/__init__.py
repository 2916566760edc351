"""Files users upload into a session: their kinds, storage, tables (one DuckDB file each), text by
page or section, the sandbox model-written SQL runs in, and the audit of uploads and deletions.

Knows sessions only by name ('agents.AgentSession'): `agents` imports this app, never the reverse."""
