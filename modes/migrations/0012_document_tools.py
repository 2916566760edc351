"""The document tools in the seeded DDR Authoring and Workflow Authoring modes: their tool policies
offer document_write and document_read (unless a curator's policy already offers everything), and
their prompts say when to keep the text as a document. A prompt is changed only where it still is
the seeded text (a curator's edit is kept); the added sentences are frozen here so later edits of
modes/seed.py do not change what this migration does."""

from __future__ import annotations

from django.db import migrations

TOOLS = ["document_write", "document_read"]
ADDED = {
    "ddr-authoring": (
        " Keep the DDR itself as a document: write it with document_write and revise that document "
        "(its documentId) instead of pasting it into the chat; the user may edit it, so work on its "
        "current version."
    ),
    "workflow-authoring": (
        " Keep the workflow itself as a document: write it with document_write and revise that "
        "document (its documentId) instead of pasting it into the chat; the user may edit it, so work "
        "on its current version."
    ),
}


def _old_prompts(apps) -> dict[str, str]:
    from importlib import import_module

    return import_module("modes.migrations.0007_lean_prompts").NEW_PROMPTS


def forwards(apps, schema_editor):
    AgentMode = apps.get_model("modes", "AgentMode")
    old = _old_prompts(apps)
    for mode in AgentMode.objects.filter(key__in=list(ADDED)):
        policy = list(mode.tool_policy or [])
        if "*" not in policy:
            policy += [name for name in TOOLS if name not in policy]
        prompt = mode.system_prompt
        if prompt == old[mode.key]:
            prompt = old[mode.key] + ADDED[mode.key]
        if policy != mode.tool_policy or prompt != mode.system_prompt:
            mode.tool_policy, mode.system_prompt = policy, prompt
            mode.save(update_fields=["tool_policy", "system_prompt"])


def backwards(apps, schema_editor):
    AgentMode = apps.get_model("modes", "AgentMode")
    old = _old_prompts(apps)
    for mode in AgentMode.objects.filter(key__in=list(ADDED)):
        mode.tool_policy = [entry for entry in (mode.tool_policy or []) if entry not in TOOLS]
        if mode.system_prompt == old[mode.key] + ADDED[mode.key]:
            mode.system_prompt = old[mode.key]
        mode.save(update_fields=["tool_policy", "system_prompt"])


class Migration(migrations.Migration):
    dependencies = [("modes", "0011_files_tools")]

    operations = [migrations.RunPython(forwards, backwards)]
