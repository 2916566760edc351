"""The General and Data Analysis modes offer the files tools (files_list, files_query, files_read:
read-only, and offered only in sessions that have files). Added to the rows a curator has not
already given them (or everything); a fresh install gets them from modes/seed.py."""

from __future__ import annotations

from django.db import migrations

ENTRIES = ["files_list", "files_query", "files_read"]
MODES = ["general", "data-analysis"]


def forwards(apps, schema_editor):
    AgentMode = apps.get_model("modes", "AgentMode")
    for mode in AgentMode.objects.filter(key__in=MODES):
        policy = list(mode.tool_policy or [])
        if "*" in policy:
            continue
        missing = [entry for entry in ENTRIES if entry not in policy]
        if missing:
            mode.tool_policy = policy + missing
            mode.save(update_fields=["tool_policy"])


def backwards(apps, schema_editor):
    AgentMode = apps.get_model("modes", "AgentMode")
    for mode in AgentMode.objects.filter(key__in=MODES):
        if any(entry in (mode.tool_policy or []) for entry in ENTRIES):
            mode.tool_policy = [entry for entry in mode.tool_policy if entry not in ENTRIES]
            mode.save(update_fields=["tool_policy"])


class Migration(migrations.Migration):
    dependencies = [("modes", "0010_mode_ask_followup")]

    operations = [migrations.RunPython(forwards, backwards)]
