"""`manage.py runworker aptix-runs`: the name workers were started with before the run queue; it now
starts `aptix_worker` (agents/run/worker.py). Runs no longer travel over the channel layer, so
Channels' own worker has nothing to serve here. This app is listed before `channels` in
INSTALLED_APPS, so this command is the one Django runs."""

from __future__ import annotations

import argparse
from typing import Any

from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError


class Command(BaseCommand):
    help = "Deprecated name of aptix_worker: `runworker aptix-runs` starts a run-queue worker."

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("channels", nargs="+")

    def handle(self, *args: Any, **options: Any) -> None:
        if options["channels"] != ["aptix-runs"]:
            raise CommandError("Aptix has no channel workers: start `manage.py aptix_worker` to run turns.")
        self.stderr.write("runworker aptix-runs is now `manage.py aptix_worker`; starting that.")
        call_command("aptix_worker")
