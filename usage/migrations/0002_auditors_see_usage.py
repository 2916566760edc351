"""Auditors read every team's usage and cost (the admin's usage page and its CSV export)."""

from __future__ import annotations

from django.db import migrations

from aptix.auditor_grants import auditors_may_view


class Migration(migrations.Migration):
    dependencies = [
        ("usage", "0001_initial"),
        ("modes", "0003_permission_groups"),
        ("auth", "0012_alter_user_first_name_max_length"),
    ]

    operations = [auditors_may_view("usage", "usageday")]
