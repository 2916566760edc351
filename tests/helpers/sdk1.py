"""MCP servers on the mcp SDK 1.30 (protocol 2025-11-25), the generation before the one Aptix runs on:
a virtualenv of its own with `mcp==1.30.0`, made once in a cache directory outside the work tree
(pinned, like the `everything` server: tests/helpers/everything.py), whose Python runs
tests/tools/mcp/sdk1_server.py. When the virtualenv cannot be made (no network to the package
index), its tests are skipped with the reason; APTIX_REQUIRE_SDK1=1 makes that a failure."""

from __future__ import annotations

import fcntl
import os
import subprocess
import venv
from pathlib import Path

import pytest

VERSION = "1.30.0"
CACHE = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "aptix-tests" / "pypi"
SERVER = Path(__file__).resolve().parents[1] / "tools" / "mcp" / "sdk1_server.py"
INSTALL_TIMEOUT = 300
REQUIRED = os.environ.get("APTIX_REQUIRE_SDK1") == "1"


def _unavailable(reason: str) -> None:
    if REQUIRED:
        pytest.fail(f"APTIX_REQUIRE_SDK1=1 but {reason}")
    pytest.skip(f"the mcp SDK {VERSION} server: {reason}; set APTIX_REQUIRE_SDK1=1 to fail instead")


def sdk1_python() -> Path:
    """The Python of the virtualenv with mcp 1.30, made into CACHE if missing (under a lock: several
    test processes may ask at once)."""
    prefix = CACHE / f"mcp-{VERSION}"
    python = prefix / "bin" / "python"
    done = prefix / ".installed"
    CACHE.mkdir(parents=True, exist_ok=True)
    with open(CACHE / f".mcp-{VERSION}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not done.is_file():
            venv.EnvBuilder(with_pip=True, clear=True).create(prefix)
            command = [str(python), "-m", "pip", "install", "--quiet", f"mcp=={VERSION}"]
            try:
                installed = subprocess.run(
                    command, capture_output=True, text=True, timeout=INSTALL_TIMEOUT, check=False
                )
            except subprocess.TimeoutExpired:
                _unavailable(f"pip install did not finish within {INSTALL_TIMEOUT} s")
            if installed.returncode != 0:
                _unavailable(f"pip install failed: {(installed.stderr or installed.stdout).strip()[-500:]}")
            done.touch()
    return python


def sdk1_entry(**extra) -> dict:
    """The mcp.json entry of the 1.30 server over stdio."""
    return {"command": str(sdk1_python()), "args": [str(SERVER)], **extra}


def sdk1_http(listener_fd: int) -> subprocess.Popen:
    """The 1.30 server over streamable HTTP, serving on the listening socket `listener_fd`."""
    return subprocess.Popen([str(sdk1_python()), str(SERVER), "--http", str(listener_fd)], pass_fds=[listener_fd])
