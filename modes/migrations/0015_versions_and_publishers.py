"""Version 1 (published) of every existing mode, and the "Catalog publishers" group; curators see
versions, auditors read and export the catalog's audit trail (modes/versions.py)."""
from __future__ import annotations

from django.contrib.auth.management import create_permissions
from django.db import migrations

# modes/versioning.py VERSIONED_FIELDS as of this migration (frozen: a migration runs on its models).
FIELDS = [
    "display_name",
    "description",
    "system_prompt_summary",
    "system_prompt",
    "is_default",
    "is_active",
    "ordering",
    "human_role_hints",
    "example_utterances",
    "tool_policy",
    "approval_policy",
    "model",
    "execution",
    "ask_followup",
]

GROUPS = {
    "Catalog publishers": [
        ("modes", "agentmode", "publish_agentmode"),
        ("modes", "agentmode", "add_agentmode"),
        ("modes", "agentmode", "change_agentmode"),
        ("modes", "agentmode", "view_agentmode"),
        ("modes", "modeversion", "view_modeversion"),
        ("modes", "catalogevent", "view_catalogevent"),
    ],
}
ADDED = {
    "Catalog curators": [("modes", "modeversion", "view_modeversion")],
    "Auditors": [
        ("modes", "modeversion", "view_modeversion"),
        ("modes", "catalogevent", "view_catalogevent"),
        ("modes", "catalogevent", "export_catalogevent"),
    ],
}


def _permissions(apps, perms):
    Permission = apps.get_model("auth", "Permission")
    return [
        Permission.objects.get(content_type__app_label=app_label, content_type__model=model, codename=codename)
        for app_label, model, codename in perms
    ]


def forwards(apps, schema_editor):
    for app_config in apps.get_app_configs():
        app_config.models_module = True
        create_permissions(app_config, apps=apps, verbosity=0)
        app_config.models_module = None
    Group = apps.get_model("auth", "Group")
    for name, perms in GROUPS.items():
        group, _ = Group.objects.get_or_create(name=name)
        group.permissions.set(_permissions(apps, perms))
    for name, perms in ADDED.items():
        group = Group.objects.filter(name=name).first()
        if group is not None:
            group.permissions.add(*_permissions(apps, perms))
    AgentMode = apps.get_model("modes", "AgentMode")
    ModeVersion = apps.get_model("modes", "ModeVersion")
    for mode in AgentMode.objects.all():
        if ModeVersion.objects.filter(mode=mode).exists():
            continue
        snapshot = {name: getattr(mode, name) for name in FIELDS}
        snapshot["teams"] = sorted(mode.teams.values_list("slug", flat=True))
        ModeVersion.objects.create(
            mode=mode,
            number=mode.version or 1,
            state="published",
            snapshot=snapshot,
            note="The catalog entry when versions began",
            published_at=mode.updated_at,
        )


def backwards(apps, schema_editor):
    apps.get_model("auth", "Group").objects.filter(name__in=GROUPS).delete()
    apps.get_model("modes", "ModeVersion").objects.all().delete()


class Migration(migrations.Migration):
    dependencies = [("modes", "0014_versions")]

    operations = [migrations.RunPython(forwards, backwards)]
