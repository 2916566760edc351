"""Benchmark: `make run` on a clean clone, to serving.

Clones this repository's HEAD into a temporary directory and, there:

1. `make .venv/.installed`: the virtualenv and the packages (uv, pip as its fallback, from the
   package index and their caches: `--cold-cache` gives both empty caches, as a fresh machine has);
2. `make run` (the rest: the database's migrations, the catalog, the first admin, the demo data, the
   static files, then the server with its default MCP servers) until GET /login/ answers 200;
3. the same prepare steps once more, each timed alone on a fresh `var/` (what takes the time), and
   the server alone to its first 200.

Printed: `make run on a clean clone: X s to serving (target <= 45 s)` and the time of each step.

    .venv/bin/python bench/startup.py [--cold-cache]
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from aptix.management.commands.aptix_prepare import STEPS  # the repository on the path first

TARGET = 45.0


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def serving(url: str, process: subprocess.Popen, timeout: float = 180) -> float:
    """Seconds until `url` answers 200 (the process must keep running)."""
    start = time.perf_counter()
    while time.perf_counter() - start < timeout:
        if process.poll() is not None:
            raise RuntimeError(f"the server exited ({process.returncode}) before serving")
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                if response.status == 200:
                    return time.perf_counter() - start
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            pass
        time.sleep(0.05)
    raise RuntimeError(f"{url} did not answer within {timeout:.0f} s")


def stop(process: subprocess.Popen) -> None:
    os.killpg(process.pid, 15)
    try:
        process.wait(20)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, 9)
        process.wait()


def seconds_to_serving(command: list[str], cwd: Path, env: dict[str, str], port: int) -> float:
    """Start `command` (a server on `port`): the seconds until GET /login/ answers 200; then stop it."""
    start = time.perf_counter()
    process = subprocess.Popen(
        command, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
    )
    try:
        serving(f"http://127.0.0.1:{port}/login/", process)
        return time.perf_counter() - start
    finally:
        stop(process)


def timed(command: list[str], cwd: Path, env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(command, cwd=cwd, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cold-cache", action="store_true", help="uv and pip with empty caches (a fresh machine)")
    args = parser.parse_args()
    env = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "REDIS_URL", "SECRET_KEY", "DEBUG"}}
    with tempfile.TemporaryDirectory(prefix="aptix-startup-") as tmp:
        clone = Path(tmp) / "aptix"
        subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True)
        if args.cold_cache:
            env["PIP_CACHE_DIR"] = str(Path(tmp) / "pip-cache")
            env["UV_CACHE_DIR"] = str(Path(tmp) / "uv-cache")
        install = timed(["make", ".venv/.installed"], clone, env)

        port = free_port()
        to_serving = seconds_to_serving(["make", "run", f"PORT={port}"], clone, env, port)

        # The steps once more, each alone, on a fresh var/ (the secret key kept).
        key = (clone / "var" / "secret_key").read_text().strip()
        shutil.rmtree(clone / "var")
        (clone / "var").mkdir()
        env["SECRET_KEY"] = key
        python = str(clone / ".venv" / "bin" / "python")
        steps = {step[0]: timed([python, "manage.py", *step], clone, env) for step in STEPS}
        serve = [python, "manage.py", "aptix_serve", "-b", "127.0.0.1", "-p", str(port)]
        steps["aptix_serve (to its first 200)"] = seconds_to_serving(serve, clone, env, port)
    cache = "empty package caches" if args.cold_cache else "the package caches as this machine has them"
    print(
        f"make run on a clean clone: {install + to_serving:.1f} s to serving (target <= {TARGET:.0f} s), "
        f"with {cache}: installing {install:.1f} s, then preparing and starting {to_serving:.1f} s"
    )
    print("the steps alone: " + ", ".join(f"{name} {seconds:.1f} s" for name, seconds in steps.items()))


if __name__ == "__main__":
    sys.exit(main())
