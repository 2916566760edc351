"""General mode offers the demo notes MCP server (tools/notes_mcp): its add_note is the writing tool
whose approval card the README tour shows. Only added when the mode exists and a curator has not
already listed it (or everything)."""

from __future__ import annotations

from django.db import migrations

ENTRY = "notes.*"


def forwards(apps, schema_editor):
    AgentMode = apps.get_model("modes", "AgentMode")
    mode = AgentMode.objects.filter(key="general").first()
    if mode is not None and not {"*", ENTRY} & set(mode.tool_policy or []):
        mode.tool_policy = [*(mode.tool_policy or []), ENTRY]
        mode.save(update_fields=["tool_policy"])


def backwards(apps, schema_editor):
    AgentMode = apps.get_model("modes", "AgentMode")
    mode = AgentMode.objects.filter(key="general").first()
    if mode is not None and ENTRY in (mode.tool_policy or []):
        mode.tool_policy = [entry for entry in mode.tool_policy if entry != ENTRY]
        mode.save(update_fields=["tool_policy"])


class Migration(migrations.Migration):
    dependencies = [("modes", "0004_approvals")]

    operations = [migrations.RunPython(forwards, backwards)]
