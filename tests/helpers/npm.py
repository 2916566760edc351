"""MCP servers published on npm, for the tests that drive them: each installed once, pinned, into a
cache directory outside the work tree (shared by the test processes, under a lock). Without node and
npm, or when the install fails, the test is skipped with the reason; APTIX_REQUIRE_NODE=1 makes that
a failure, as the other APTIX_REQUIRE_* do. tests/helpers/everything.py and ext_apps.py use it."""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
from pathlib import Path

import pytest

CACHE = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "aptix-tests" / "npm"
INSTALL_TIMEOUT = 300
REQUIRED = os.environ.get("APTIX_REQUIRE_NODE") == "1"


def unavailable(what: str, reason: str) -> None:
    if REQUIRED:
        pytest.fail(f"APTIX_REQUIRE_NODE=1 but {reason}")
    pytest.skip(f"{what}: {reason}; set APTIX_REQUIRE_NODE=1 to fail instead")


def npm_installed(package: str, version: str, entry: str, *, prefix: Path, what: str) -> Path:
    """The file `entry` of `package`@`version` (a path inside the package), installed into `prefix`
    if missing; `what` names it in a skip's reason."""
    if shutil.which("node") is None or shutil.which("npm") is None:
        unavailable(what, "node and npm are not installed (bin/install-test-deps installs them)")
    path = prefix / "node_modules" / package / entry
    prefix.mkdir(parents=True, exist_ok=True)
    with open(prefix / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # several test processes may ask at once
        if not path.is_file():
            command = ["npm", "install", "--no-audit", "--no-fund", "--prefix", str(prefix), f"{package}@{version}"]
            try:
                done = subprocess.run(command, capture_output=True, text=True, timeout=INSTALL_TIMEOUT, check=False)
            except subprocess.TimeoutExpired:
                unavailable(what, f"npm install did not finish within {INSTALL_TIMEOUT} s")
            if done.returncode != 0 or not path.is_file():
                unavailable(what, f"npm install failed: {(done.stderr or done.stdout).strip()[-500:]}")
    return path
