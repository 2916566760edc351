"""Data migrations that let the Auditors group read one more audit model in the admin (mode history,
approvals, file audit, connection events, share events…): the one shape they all take, written once."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.management import create_permissions
from django.db import migrations

AUDITORS = "Auditors"


def auditors_may_view(app_label: str, model_name: str) -> migrations.RunPython:
    """A RunPython operation that gives the Auditors group `view_<model_name>` of `app_label` (the
    permission is created first: post_migrate has not run yet inside the migration) and takes it back
    when unapplied. Depend on `("modes", "0003_permission_groups")`, which creates the group."""
    codename = f"view_{model_name.lower()}"

    def forwards(apps: Any, schema_editor: Any) -> None:
        app_config = apps.get_app_config(app_label)
        app_config.models_module = True
        create_permissions(app_config, apps=apps, verbosity=0)
        app_config.models_module = None
        permission = apps.get_model("auth", "Permission")
        view = permission.objects.get(content_type__app_label=app_label, codename=codename)
        for group in apps.get_model("auth", "Group").objects.filter(name=AUDITORS):
            group.permissions.add(view)

    def backwards(apps: Any, schema_editor: Any) -> None:
        permission = apps.get_model("auth", "Permission")
        view = permission.objects.filter(content_type__app_label=app_label, codename=codename).first()
        if view is not None:
            for group in apps.get_model("auth", "Group").objects.filter(name=AUDITORS):
                group.permissions.remove(view)

    return migrations.RunPython(forwards, backwards)
