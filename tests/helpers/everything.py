"""The reference MCP server `everything` (npm `@modelcontextprotocol/server-everything`), run by node:
installed once into a cache directory outside the work tree, pinned, so the tests that drive it see
the same tools every time. Without node and npm, or when the install fails, its tests are skipped
with the reason (APTIX_REQUIRE_NODE=1 makes that a failure, as the other APTIX_REQUIRE_* do)."""

from __future__ import annotations

import fcntl
import os
import shutil
import socket
import subprocess
import time
from pathlib import Path

import pytest

PACKAGE = "@modelcontextprotocol/server-everything"
VERSION = "2026.8.31"  # its tools (get-tiny-image, simulate-research-query) and its HTTP answers
CACHE = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "aptix-tests" / "npm"
INSTALL_TIMEOUT = 300
REQUIRED = os.environ.get("APTIX_REQUIRE_NODE") == "1"


def _unavailable(reason: str) -> None:
    if REQUIRED:
        pytest.fail(f"APTIX_REQUIRE_NODE=1 but {reason}")
    pytest.skip(f"the reference MCP server everything: {reason}; set APTIX_REQUIRE_NODE=1 to fail instead")


def everything_server() -> Path:
    """Its entry point (dist/index.js), installed into CACHE if missing (under a lock: several test
    processes may ask at once)."""
    if shutil.which("node") is None or shutil.which("npm") is None:
        _unavailable("node and npm are not installed (bin/install-test-deps installs them)")
    prefix = CACHE / VERSION
    entry = prefix / "node_modules" / PACKAGE / "dist" / "index.js"
    prefix.mkdir(parents=True, exist_ok=True)
    with open(prefix / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not entry.is_file():
            command = ["npm", "install", "--no-audit", "--no-fund", "--prefix", str(prefix), f"{PACKAGE}@{VERSION}"]
            try:
                done = subprocess.run(command, capture_output=True, text=True, timeout=INSTALL_TIMEOUT, check=False)
            except subprocess.TimeoutExpired:
                _unavailable(f"npm install did not finish within {INSTALL_TIMEOUT} s")
            if done.returncode != 0 or not entry.is_file():
                _unavailable(f"npm install failed: {(done.stderr or done.stdout).strip()[-500:]}")
    return entry


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
