"""Auditors read who shared a session with the team, stopped sharing it or continued it as a copy."""

from __future__ import annotations

from django.db import migrations

from aptix.auditor_grants import auditors_may_view


class Migration(migrations.Migration):
    dependencies = [
        ("agents", "0017_session_sharing"),
        ("modes", "0003_permission_groups"),
        ("auth", "0012_alter_user_first_name_max_length"),
    ]

    operations = [auditors_may_view("agents", "shareevent")]
