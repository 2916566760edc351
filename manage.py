#!/usr/bin/env python
"""Django's command-line utility for administrative tasks.

With no SECRET_KEY in the environment it uses the key `make run` keeps in var/secret_key (generated
there on first use, as `make run` does), so the README's `manage.py` commands work outside `make`.
(`make run` also reads `.env`; this does not: a command outside `make` sees only the environment, so
a test's server never picks up a developer's .env.)"""

import os
import secrets
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent


def use_secret_key_file(path: Path) -> None:
    """No SECRET_KEY in the environment: the one `make run` generates and keeps in var/."""
    if os.environ.get("SECRET_KEY"):
        return
    if not path.is_file() or not path.read_text().strip():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(secrets.token_urlsafe(50) + "\n")
        path.chmod(0o600)
    os.environ["SECRET_KEY"] = path.read_text().strip()


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "aptix.settings")
    use_secret_key_file(ROOT / "var" / "secret_key")
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
