"""Create the "Catalog curators" and "Auditors" groups with exactly the permissions they need.

Permissions are normally created after all migrations (post_migrate); create them here first so the
groups can be filled on a fresh database.
"""
from __future__ import annotations

from django.contrib.auth.management import create_permissions
from django.db import migrations

GROUPS = {
    # Curators maintain the catalog; they do not see sessions or the audit trail.
    "Catalog curators": [
        ("modes", "agentmode", "add_agentmode"),
        ("modes", "agentmode", "change_agentmode"),
        ("modes", "agentmode", "delete_agentmode"),
        ("modes", "agentmode", "view_agentmode"),
    ],
    # Auditors read the catalog, the mode history (and export it) and the sessions it points to.
    "Auditors": [
        ("modes", "agentmode", "view_agentmode"),
        ("modes", "modehistory", "view_modehistory"),
        ("modes", "modehistory", "export_modehistory"),
        ("agents", "agentsession", "view_agentsession"),
        ("agents", "turn", "view_turn"),
        ("agents", "turnevent", "view_turnevent"),
    ],
}


def forwards(apps, schema_editor):
    for app_config in apps.get_app_configs():
        app_config.models_module = True
        create_permissions(app_config, apps=apps, verbosity=0)
        app_config.models_module = None
    Group = apps.get_model("auth", "Group")
    Permission = apps.get_model("auth", "Permission")
    for name, perms in GROUPS.items():
        group, _ = Group.objects.get_or_create(name=name)
        group.permissions.set(
            [
                Permission.objects.get(
                    content_type__app_label=app_label, content_type__model=model, codename=codename
                )
                for app_label, model, codename in perms
            ]
        )


def backwards(apps, schema_editor):
    apps.get_model("auth", "Group").objects.filter(name__in=GROUPS).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("modes", "0002_seed_catalog"),
        ("agents", "0001_initial"),
        ("auth", "0012_alter_user_first_name_max_length"),
        ("contenttypes", "0002_remove_content_type_name"),
    ]

    operations = [migrations.RunPython(forwards, backwards)]
