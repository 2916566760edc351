"""Auditors read the file audit (files.FileAudit) as they read the mode history and the approvals."""

from __future__ import annotations

from django.db import migrations

from aptix.auditor_grants import auditors_may_view


class Migration(migrations.Migration):
    dependencies = [
        ("files", "0001_initial"),
        ("modes", "0003_permission_groups"),
        ("auth", "0012_alter_user_first_name_max_length"),
    ]

    operations = [auditors_may_view("files", "fileaudit")]
