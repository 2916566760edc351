"""The reference MCP server `everything` (npm `@modelcontextprotocol/server-everything`), run by node:
installed once into a cache directory outside the work tree, pinned, so the tests that drive it see
the same tools every time (tests/helpers/npm.py: skipped with the reason without node and npm)."""

from __future__ import annotations

import os
import socket
import subprocess
import time
from pathlib import Path

from .npm import CACHE, npm_installed

PACKAGE = "@modelcontextprotocol/server-everything"
VERSION = "2026.8.31"  # its tools (get-tiny-image, simulate-research-query) and its HTTP answers


def everything_server() -> Path:
    """Its entry point (dist/index.js), installed into the cache if missing (tests/helpers/npm.py)."""
    return npm_installed(
        PACKAGE, VERSION, "dist/index.js", prefix=CACHE / VERSION, what="the reference MCP server everything"
    )


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class EverythingHttp:
    """The everything server over streamable HTTP (`node dist/index.js streamableHttp`) on a port of
    its own; `start()` again after `kill()` is a restarted server at the same address."""

    def __init__(self, entry: Path) -> None:
        self.entry = entry
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/mcp"
        self.process: subprocess.Popen | None = None

    def start(self, timeout: float = 30) -> None:
        env = {**os.environ, "PORT": str(self.port)}
        self.process = subprocess.Popen(
            ["node", str(self.entry), "streamableHttp"],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return
            except OSError:
                time.sleep(0.05)
        raise TimeoutError(f"the everything server did not listen on port {self.port} within {timeout:g} s")

    def kill(self) -> None:
        if self.process is not None:
            self.process.kill()
            self.process.wait()
            self.process = None
