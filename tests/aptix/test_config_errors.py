"""Configuration errors stop start-up: a models.json or mcp.json that does not validate, or a setting
that cannot be used, makes `manage.py check`, `aptix_serve` and `aptix_worker` refuse to start,
naming the file (or variable), the key and the problem. (A models.json with an unknown key used to
start fine and leave every turn failing.)"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # real processes

ROOT = Path(__file__).resolve().parents[2]
COMMANDS = {
    "check": ["check"],
    "aptix_serve": ["aptix_serve", "-p", "0"],
    "aptix_worker": ["aptix_worker"],
}


def start(command: str, tmp_path: Path, **environ: str) -> subprocess.CompletedProcess:
    env = {
        **os.environ,
        "DEBUG": "false",
        "SECRET_KEY": "test-only",
        "APTIX_VAR_DIR": str(tmp_path / "var"),
        "REDIS_URL": "redis://127.0.0.1:1/0",  # the worker's; never reached: the checks come first
        "APTIX_MCP_CONFIG": str(tmp_path / "no-mcp.json"),
        **environ,
    }
    env.pop("DATABASE_URL", None)
    return subprocess.run(
        [sys.executable, "manage.py", *COMMANDS[command]],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=90,
        check=False,
    )


@pytest.fixture(params=list(COMMANDS))
def command(request) -> str:
    return request.param


def test_a_models_file_with_an_unknown_key_refuses_start_up(command, tmp_path):
    models = tmp_path / "models.json"
    models.write_text(json.dumps({"providers": {"p": {}}, "models": {"m": {"provider": "p", "colour": "red"}}}))
    done = start(command, tmp_path, APTIX_MODELS_CONFIG=str(models))
    assert done.returncode != 0
    assert f'{models}: model "m": unknown key "colour"' in done.stderr, done.stderr


def test_an_mcp_file_with_a_broken_entry_refuses_start_up(command, tmp_path):
    mcp = tmp_path / "mcp.json"
    mcp.write_text(json.dumps({"mcpServers": {"time": {"command": "python", "timeout": "soon"}}}))
    done = start(command, tmp_path, APTIX_MCP_CONFIG=str(mcp))
    assert done.returncode != 0
    assert f'{mcp}: MCP server "time": "timeout" must be a positive number of seconds' in done.stderr, done.stderr


def test_a_setting_that_cannot_be_used_refuses_start_up(command, tmp_path):
    done = start(command, tmp_path, APTIX_RATE_TURNS="thirty a minute")
    assert done.returncode != 0
    assert "APTIX_RATE_TURNS must be a rate such as 30/m" in done.stderr and "'thirty a minute'" in done.stderr
