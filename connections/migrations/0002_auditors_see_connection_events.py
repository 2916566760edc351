"""Auditors read the connection events (who connected, disconnected or lost a connection)."""

from __future__ import annotations

from django.contrib.auth.management import create_permissions
from django.db import migrations


def forwards(apps, schema_editor):
    app_config = apps.get_app_config("connections")
    app_config.models_module = True
    create_permissions(app_config, apps=apps, verbosity=0)
    app_config.models_module = None
    Group = apps.get_model("auth", "Group")
    Permission = apps.get_model("auth", "Permission")
    view = Permission.objects.get(content_type__app_label="connections", codename="view_connectionevent")
    for group in Group.objects.filter(name="Auditors"):
        group.permissions.add(view)


def backwards(apps, schema_editor):
    Group = apps.get_model("auth", "Group")
    Permission = apps.get_model("auth", "Permission")
    view = Permission.objects.filter(content_type__app_label="connections", codename="view_connectionevent").first()
    if view is not None:
        for group in Group.objects.filter(name="Auditors"):
            group.permissions.remove(view)


class Migration(migrations.Migration):
    dependencies = [
        ("connections", "0001_user_credentials_and_audit"),
        ("modes", "0003_permission_groups"),
        ("auth", "0012_alter_user_first_name_max_length"),
    ]

    operations = [migrations.RunPython(forwards, backwards)]
