"""Curators read the feedback on answers (the report per mode and mode version, the turns' traces it
links to); auditors read it too and export it as CSV."""

from __future__ import annotations

from django.contrib.auth.management import create_permissions
from django.db import migrations

GRANTS = {
    "Catalog curators": ["view_answerfeedback"],
    "Auditors": ["view_answerfeedback", "export_answerfeedback"],
}


def forwards(apps, schema_editor):
    app_config = apps.get_app_config("agents")
    app_config.models_module = True
    create_permissions(app_config, apps=apps, verbosity=0)
    app_config.models_module = None
    Permission = apps.get_model("auth", "Permission")
    for group in apps.get_model("auth", "Group").objects.filter(name__in=GRANTS):
        group.permissions.add(
            *Permission.objects.filter(content_type__app_label="agents", codename__in=GRANTS[group.name])
        )


def backwards(apps, schema_editor):
    Permission = apps.get_model("auth", "Permission")
    for group in apps.get_model("auth", "Group").objects.filter(name__in=GRANTS):
        group.permissions.remove(
            *Permission.objects.filter(content_type__app_label="agents", codename__in=GRANTS[group.name])
        )


class Migration(migrations.Migration):
    dependencies = [
        ("agents", "0022_answer_feedback"),
        ("modes", "0003_permission_groups"),
        ("auth", "0012_alter_user_first_name_max_length"),
    ]

    operations = [migrations.RunPython(forwards, backwards)]
