"""`manage.py aptix_config_docs [--check]`: write docs/configuration.md and .env.example from the
declarations in aptix/env/ (aptix/env_docs.py renders them); with --check, only say whether the
committed files are current and fail when they are not."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from aptix.env_docs import REPO_DIR, generated_files


class Command(BaseCommand):
    help = "Generate docs/configuration.md and .env.example from the declarations in aptix/env/."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--check", action="store_true", help="Change nothing; fail if a file is out of date.")

    def handle(self, *args: Any, check: bool, **options: Any) -> None:
        stale = []
        for path, text in generated_files().items():
            name = path.relative_to(REPO_DIR)
            if path.is_file() and path.read_text(encoding="utf-8") == text:
                self.stdout.write(f"{name} is up to date.")
            elif check:
                stale.append(str(name))
            else:
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(text, encoding="utf-8")
                self.stdout.write(f"Wrote {name}.")
        if stale:
            raise CommandError(
                f"Out of date: {', '.join(stale)}. Run `python manage.py aptix_config_docs` and commit the result."
            )
