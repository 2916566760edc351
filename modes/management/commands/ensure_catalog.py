"""Make sure the built-in catalog entries exist and exactly one mode is the default.

Idempotent: entries a curator edited are left as they are; only missing seed entries are re-created.
"""

from __future__ import annotations

from django.core.management.base import BaseCommand
from django.db import transaction

from modes.models import DEFAULT_MODE_KEY, AgentMode
from modes.seed import SEED_MODES, SEED_TESTS_AND_CHECKS


class Command(BaseCommand):
    help = "Create missing built-in modes and make sure exactly one mode is the default."

    @transaction.atomic
    def handle(self, *args, **options):
        has_default = AgentMode.objects.filter(is_default=True).exists()
        created = []
        for entry in SEED_MODES:
            values = {**entry, **SEED_TESTS_AND_CHECKS.get(entry["key"], {})}
            if has_default:
                values["is_default"] = False
            _, was_created = AgentMode.objects.get_or_create(key=values.pop("key"), defaults=values)
            if was_created:
                created.append(entry["key"])
                has_default = has_default or values.get("is_default", False)
        if not AgentMode.objects.filter(is_default=True).exists():
            AgentMode.objects.filter(key=DEFAULT_MODE_KEY).update(is_default=True, is_active=True)
        default = AgentMode.objects.get(is_default=True)
        summary = f"created {', '.join(created)}" if created else "nothing to create"
        self.stdout.write(f"Catalog: {AgentMode.objects.count()} modes, default '{default.key}' ({summary}).")
