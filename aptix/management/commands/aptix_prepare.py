"""What `make run` does before it serves, in one process: the database's migrations, the built-in
catalog, the first admin, the demo database and the static files.

Each was a `manage.py` command of its own, and each paid Django's start (the apps, the URLs, the SDKs
they import: about 6 s on the 2-core VM) again: bench/startup.py measured 34 s for the five alone."""

from __future__ import annotations

from django.core.management import call_command
from django.core.management.base import BaseCommand

# The steps, as on their command lines (bench/startup.py times each alone).
STEPS = [
    ["migrate", "--noinput"],
    ["ensure_catalog"],
    ["ensure_admin"],
    ["demo_data"],
    ["collectstatic", "--noinput", "--verbosity", "0"],
]


class Command(BaseCommand):
    help = "Migrate, ensure the catalog and the first admin, build the demo database, collect the static files."

    def handle(self, *args, **options):
        for step in STEPS:
            call_command(*step, stdout=self.stdout, stderr=self.stderr)
