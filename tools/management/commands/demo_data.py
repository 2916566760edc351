"""Create the SQLite demo database the `sql` MCP server reads (aptix/demo_data/*.csv)."""

from __future__ import annotations

from pathlib import Path

from django.core.management.base import BaseCommand

from tools.demo_data import build_demo_database, default_path


class Command(BaseCommand):
    help = "Create the demo database for the sql MCP server; does nothing when it is already current."

    def add_arguments(self, parser):
        parser.add_argument(
            "--path", type=Path, default=None, help="where to write it (default: $APTIX_DEMO_DB, else var/demo.sqlite3)"
        )

    def handle(self, *args, path: Path | None, **options):
        path = path or default_path()
        if build_demo_database(path):
            self.stdout.write(self.style.SUCCESS(f"Created the demo database at {path}."))
        else:
            self.stdout.write(f"The demo database at {path} is up to date.")
