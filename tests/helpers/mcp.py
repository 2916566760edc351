"""Configuring and watching the MCP host in tests: config files, the fixture server's entry, status
look-ups, and a streamable-HTTP server process on an address the test owns."""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

SERVERS = Path(__file__).resolve().parents[1] / "tools" / "mcp"
FIXTURE = SERVERS / "mcp_fixture_server.py"
HTTP_SERVER = SERVERS / "http_fixture_server.py"
GUIDE = SERVERS / "guide_server.py"  # prompts, resources and instructions
START_TIMEOUT = 60


def by_name(statuses) -> dict:
    return {status.name: status for status in statuses}


def write_config(path: Path, servers: dict) -> Path:
    path.write_text(json.dumps({"mcpServers": servers}))
    return path


def fixture_entry(**extra) -> dict:
    return {"command": "python", "args": [str(FIXTURE)], **extra}


def all_settled(statuses) -> bool:
    return all(status.settled for status in statuses)


def guide_entry(**extra) -> dict:
    return {"command": sys.executable, "args": [str(GUIDE)], **extra}


@contextlib.contextmanager
def ready_host(directory: Path, servers: dict, *, serving: bool = False, **options: Any) -> Iterator[Any]:
    """An McpHost of `servers` (mcp.json entries) once every one is ready; stopped on exit. `serving`:
    the process's host meanwhile (what the reasoner, views and API use); `options` go to McpHost."""
    from tools.mcp import host as host_module

    host = host_module.McpHost(write_config(directory / "mcp.json", servers), **options)
    host.start()
    previous = host_module._host
    try:
        statuses = host.wait_until_sync(all_settled, START_TIMEOUT)
        assert [status.state for status in statuses] == ["ready"] * len(servers), statuses
        if serving:
            host_module._host = host
        yield host
    finally:
        host_module._host = previous
        host.stop()


def gone(pid: int, timeout: float) -> bool:
    """Has the process exited (within `timeout`)? A pidfd becomes readable when it does."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return True
    try:
        return bool(select.select([fd], [], [], timeout)[0])
    finally:
        os.close(fd)


class HttpServer:
    """The server's address is a socket this test owns: bound before the host connects, handed to
    each server process, so a restarted server answers at the same address."""

    def __init__(self) -> None:
        self.listener = socket.socket()
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind(("127.0.0.1", 0))  # not listening yet: connections are refused
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}/mcp"
        self.process: subprocess.Popen | None = None

    def start(self, *options: str) -> None:
        self.listener.listen()
        fd = self.listener.fileno()
        self.process = subprocess.Popen([sys.executable, str(HTTP_SERVER), str(fd), *options], pass_fds=[fd])

    def forget_sessions(self) -> None:
        """Make the server forget its sessions, as a restart does, keeping its connections open."""
        assert self.process is not None
        self.process.send_signal(signal.SIGUSR1)

    def kill(self) -> None:
        if self.process is not None:
            self.process.kill()
            self.process.wait()

    def close(self) -> None:
        self.kill()
        self.listener.close()
