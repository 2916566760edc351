"""Helpers for the SQL MCP server tests: the real server as a subprocess, and database fingerprints."""

from __future__ import annotations

import asyncio
import hashlib
import sqlite3
import sys
from pathlib import Path

from mcp import ClientSession, StdioServerParameters, stdio_client

REPO_DIR = Path(__file__).resolve().parents[3]


class SqlServer:
    """`python -m tools.mcp.sql_server <url>` with an initialised client session.

    The session lives in a task of its own: a module-scoped fixture's set-up and tear-down run in
    different tasks, and anyio insists that the scopes inside stdio_client close in the task that
    opened them.
    """

    def __init__(self, url: str, **env: str):
        self.params = StdioServerParameters(
            command=sys.executable,
            args=["-m", "tools.mcp.sql_server", url],
            cwd=str(REPO_DIR),
            env={"PYTHONPATH": str(REPO_DIR), **env},
        )
        self._stop = asyncio.Event()
        self._task: asyncio.Task | None = None

    async def start(self) -> ClientSession:
        ready: asyncio.Future[ClientSession] = asyncio.get_running_loop().create_future()
        self._task = asyncio.create_task(self._serve(ready))
        return await ready

    async def _serve(self, ready: asyncio.Future) -> None:
        try:
            async with stdio_client(self.params) as (read, write), ClientSession(read, write) as session:
                await session.initialize()
                ready.set_result(session)
                await self._stop.wait()
        except BaseException as exc:
            if not ready.done():
                ready.set_exception(exc)
            raise

    async def stop(self) -> None:
        self._stop.set()
        await self._task


def text(result) -> str:
    """The text of a tool result (the server returns one text block)."""
    return "".join(block.text for block in result.content)


def sqlite_fingerprint(path: Path) -> tuple[str, str, list[str]]:
    """The file's bytes, its logical content and the files beside it (journals, attached files)."""
    conn = sqlite3.connect(path.resolve().as_uri() + "?mode=ro", uri=True)
    try:
        dump = "\n".join(conn.iterdump())
    finally:
        conn.close()
    return (
        hashlib.sha256(path.read_bytes()).hexdigest(),
        hashlib.sha256(dump.encode()).hexdigest(),
        sorted(p.name for p in path.parent.iterdir()),
    )
