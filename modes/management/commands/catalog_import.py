"""Read the catalog from files (modes/files/): DIR/<key>.mode.md, VS Code custom agents and Claude Code
subagents. Every file is validated before anything is written; one bad file imports nothing."""

from __future__ import annotations

from pathlib import Path

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from modes.files.plan import CHANGED, ERROR_NOTHING_TO_IMPORT, apply_plan, plan_import
from modes.files.sources import read_directory


class Command(BaseCommand):
    help = (
        "Import DIR/*.mode.md (and *.agent.md, .claude/agents/*.md): print each mode as new, changed (with a "
        "diff) or unchanged, and save each new or changed one as a draft (--publish: published). A bad file "
        "names its line and field and nothing is imported."
    )

    def add_arguments(self, parser):
        parser.add_argument("directory", help="The directory holding the files.")
        parser.add_argument(
            "--publish",
            action="store_true",
            help="Publish each new or changed mode at once (with two-person review on: submit it for review).",
        )
        parser.add_argument("--dry-run", action="store_true", help="Print what would change; write nothing.")

    def handle(self, *args, **options):
        directory = Path(options["directory"])
        if not directory.is_dir():
            raise CommandError(f"{directory}: no such directory")
        sources, problems = read_directory(directory)
        if not sources and not problems:
            raise CommandError(
                f"{ERROR_NOTHING_TO_IMPORT} in {directory} (*.mode.md, *.agent.md, .claude/agents/*.md)."
            )
        plan = plan_import(sources, problems)
        for note in plan.notes:
            self.stdout.write(note)
        if plan.problems:
            for problem in plan.problems:
                self.stderr.write(str(problem))
            raise CommandError(f"{len(plan.problems)} problem(s) in the files: nothing was imported.")
        for mode in plan.modes:
            self.stdout.write(f"{mode.status}: {mode.key} ({mode.source})")
            if mode.status == CHANGED:
                self.stdout.write("".join(f"    {line}" for line in mode.diff.splitlines(keepends=True)), ending="")
        if options["dry_run"]:
            self.stdout.write(f"Dry run: {plan.summary()}; nothing was written.")
            return
        try:
            imported = apply_plan(plan, publish=options["publish"], author=None)
        except ValidationError as exc:
            raise CommandError(f"Nothing was imported: {' '.join(exc.messages)}") from exc
        for done in imported:
            self.stdout.write(f"  {done}")
        self.stdout.write(f"Imported: {plan.summary()}.")
        if any(done.state != "published" for done in imported):
            self.stdout.write("Drafts change nothing live until they are published (Admin → Agent modes).")
