"""Helpers for the SQL MCP server tests: the real server as a subprocess (with what /proc says about
it), database fingerprints and PostgreSQL URLs."""

from __future__ import annotations

import asyncio
import hashlib
import os
import sqlite3
import sys
from pathlib import Path
from urllib.parse import quote, urlsplit, urlunsplit

import pytest
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
        self.pid: int | None = None  # the server process, once started

    async def start(self) -> ClientSession:
        ready: asyncio.Future[ClientSession] = asyncio.get_running_loop().create_future()
        before = _children()
        self._task = asyncio.create_task(self._serve(ready))
        session = await ready
        (self.pid,) = _children() - before
        return session

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


def tool_error(result) -> str:
    """The message of a tool error, without the SDK's "Error executing tool <name>: " prefix."""
    assert result.is_error, text(result)
    return text(result).partition(": ")[2]


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


def _children() -> set[int]:
    """This process's child processes."""
    me, pids = str(os.getpid()), set()
    for entry in Path("/proc").iterdir():
        try:
            # /proc/<pid>/stat: "pid (command) state ppid …"; the command may contain spaces.
            if entry.name.isdigit() and (entry / "stat").read_text().rpartition(")")[2].split()[1] == me:
                pids.add(int(entry.name))
        except OSError:  # gone meanwhile
            continue
    return pids


def peak_rss_mb(pid: int) -> int:
    """The process's peak resident memory so far (VmHWM), in MiB."""
    status = Path(f"/proc/{pid}/status").read_text()
    line = next(line for line in status.splitlines() if line.startswith("VmHWM:"))
    return int(line.split()[1]) // 1024


def address_space_limit(pid: int) -> str:
    """The process's soft RLIMIT_AS as /proc shows it: a number of bytes or "unlimited"."""
    limits = Path(f"/proc/{pid}/limits").read_text()
    return next(line for line in limits.splitlines() if line.startswith("Max address space")).split()[3]


async def exited(pid: int) -> None:
    """Wait for the process to end (a pidfd becomes readable then); no polling."""
    loop = asyncio.get_running_loop()
    done = loop.create_future()
    fd = os.pidfd_open(pid)
    loop.add_reader(fd, lambda: done.done() or done.set_result(None))
    try:
        await done
    finally:
        loop.remove_reader(fd)
        os.close(fd)


def pg_url(base: str, *, dbname: str, user: str | None = None, password: str | None = None) -> str:
    """`base` (a postgresql:// URL) for another database and, if given, another role."""
    parts = urlsplit(base)
    netloc = parts.netloc
    if user is not None:
        host = netloc.rpartition("@")[2]
        netloc = f"{quote(user)}:{quote(password or '')}@{host}"
    return urlunsplit((parts.scheme, netloc, "/" + dbname, parts.query, ""))


# The PostgreSQL tests connect with the DATABASE_URL that bin/with-postgres exports (an admin role).
ADMIN_URL = os.environ.get("DATABASE_URL", "")
NEEDS_POSTGRES = [
    pytest.mark.postgres,
    pytest.mark.skipif(
        not ADMIN_URL.startswith(("postgres://", "postgresql://")),
        reason="needs PostgreSQL: run under bin/with-postgres",
    ),
]
