"""Seed the Aptix mode catalog with the four built-in agent modes.

The data lives in modes/seed.py (SEED_MODES), plain data shared with the `ensure_catalog`
command. Each mode has a fixed id so ids are stable across installs.
"""

from __future__ import annotations

from django.db import migrations

from modes.seed import SEED_MODES


def forwards(apps, schema_editor):
    AgentMode = apps.get_model("modes", "AgentMode")
    for mode in SEED_MODES:
        # Only the fields this migration's model has: later migrations add the others (0009: execution).
        known = {field.name for field in AgentMode._meta.get_fields()}
        defaults = {field: value for field, value in mode.items() if field != "key" and field in known}
        AgentMode.objects.update_or_create(key=mode["key"], defaults=defaults)


def backwards(apps, schema_editor):
    AgentMode = apps.get_model("modes", "AgentMode")
    AgentMode.objects.filter(key__in=[mode["key"] for mode in SEED_MODES]).delete()


class Migration(migrations.Migration):
    dependencies = [("modes", "0001_initial")]

    operations = [migrations.RunPython(forwards, backwards)]
