"""HTTPS mode is complete: `manage.py check --deploy` with APTIX_HTTPS=true reports nothing at warning
level (HSTS, SSL redirect behind the proxy header, secure cookies), in a subprocess with a production
environment."""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # real subprocesses (servers, workers, web processes)

ROOT = Path(__file__).resolve().parents[2]


def test_check_deploy_is_clean_in_https_mode(tmp_path):
    env = {
        **os.environ,
        "APTIX_HTTPS": "true",
        "DEBUG": "false",
        "SECRET_KEY": secrets.token_urlsafe(60),
        "ALLOWED_HOSTS": "aptix.example.com",
        "APTIX_VAR_DIR": str(tmp_path),
    }
    env.pop("DATABASE_URL", None)
    done = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        check=False,
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "no issues" in done.stdout
