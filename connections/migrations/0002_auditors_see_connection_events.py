"""Auditors read the connection events (who connected, disconnected or lost a connection)."""

from __future__ import annotations

from django.db import migrations

from aptix.auditor_grants import auditors_may_view


class Migration(migrations.Migration):
    dependencies = [
        ("connections", "0001_user_credentials_and_audit"),
        ("modes", "0003_permission_groups"),
        ("auth", "0012_alter_user_first_name_max_length"),
    ]

    operations = [auditors_may_view("connections", "connectionevent")]
