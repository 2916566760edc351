"""The prompt-size benchmark runs (bench/prompt_size.py, a real subprocess starting the shipped MCP
servers) and the lean-prompt targets hold: an Ask turn in general mode and an Agent turn in
data-analysis fit their token targets. Sizes, not timings."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_the_prompt_size_benchmark_runs_and_the_targets_hold(tmp_path):
    env = {**os.environ, "DEBUG": "false", "SECRET_KEY": "bench-only", "APTIX_VAR_DIR": str(tmp_path)}
    env.pop("DATABASE_URL", None)
    done = subprocess.run(
        [sys.executable, "bench/prompt_size.py"],
        check=False,
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    rows = {tuple(line.split()[:2]): line for line in done.stdout.splitlines() if line.startswith("  ") and "(" in line}
    assert "target <= 800: ok" in rows[("general", "ask")], done.stdout
    assert "target <= 1500: ok" in rows[("data-analysis", "agent")], done.stdout
