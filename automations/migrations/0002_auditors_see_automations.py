"""Auditors read automations, their runs, the audit and the inbox's items in the admin (automations/admin.py)."""

from __future__ import annotations

from django.db import migrations

from aptix.auditor_grants import auditors_may_view


class Migration(migrations.Migration):
    dependencies = [
        ("automations", "0001_initial"),
        ("modes", "0003_permission_groups"),
        ("auth", "0012_alter_user_first_name_max_length"),
    ]

    operations = [
        auditors_may_view("automations", "automation"),
        auditors_may_view("automations", "automationrun"),
        auditors_may_view("automations", "automationaudit"),
        auditors_may_view("automations", "inboxitem"),
    ]
