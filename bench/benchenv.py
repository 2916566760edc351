"""Django for a benchmark script run as `.venv/bin/python bench/<name>.py`: the repository on the
import path, settings from the environment with benchmark defaults, and SQLite in a fresh temporary
directory unless DATABASE_URL names a database."""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def setup_django(**defaults: str) -> None:
    """Set up Django; `defaults` are environment variables set unless the environment has them."""
    sys.path.insert(0, str(ROOT))
    for name, value in {"DJANGO_SETTINGS_MODULE": "aptix.settings", "SECRET_KEY": "bench-only", **defaults}.items():
        os.environ.setdefault(name, value)
    if not os.environ.get("DATABASE_URL"):
        os.environ["APTIX_VAR_DIR"] = tempfile.mkdtemp(prefix="aptix-bench-")

    import django

    django.setup()
