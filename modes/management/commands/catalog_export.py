"""Write the catalog as files: DIR/<key>.mode.md for every mode, inactive ones too (modes/files/)."""

from __future__ import annotations

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from modes.files.format import SUFFIX
from modes.files.plan import export_files


class Command(BaseCommand):
    help = "Write one DIR/<key>.mode.md file per catalog mode (YAML front matter, the prompt as the body)."

    def add_arguments(self, parser):
        parser.add_argument("directory", help="Where to write the files (created if missing).")

    def handle(self, *args, **options):
        directory = Path(options["directory"])
        try:
            directory.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise CommandError(f"Cannot create {directory}: {exc}") from exc
        files = export_files()
        for name, text in files.items():
            # Bytes, so the text is written exactly as rendered (no newline translation).
            (directory / name).write_bytes(text.encode("utf-8"))
        stale = sorted(path.name for path in directory.glob(f"*{SUFFIX}") if path.name not in files)
        for name in stale:
            self.stderr.write(f"{name}: no such mode in the catalog (left as it is)")
        self.stdout.write(f"Wrote {len(files)} mode files to {directory}.")
