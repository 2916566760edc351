"""Auditors list projects and their files, and read the project audit, in the admin (projects/admin.py)."""

from __future__ import annotations

from django.db import migrations

from aptix.auditor_grants import auditors_may_view


class Migration(migrations.Migration):
    dependencies = [
        ("projects", "0002_project_audit"),
        ("modes", "0003_permission_groups"),
        ("auth", "0012_alter_user_first_name_max_length"),
    ]

    operations = [auditors_may_view("projects", "project"), auditors_may_view("projects", "projectaudit")]
