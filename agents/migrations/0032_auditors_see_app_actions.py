"""Auditors read what the MCP Apps in conversations did (their tool calls, messages, context)."""

from __future__ import annotations

from django.db import migrations

from aptix.auditor_grants import auditors_may_view


class Migration(migrations.Migration):
    dependencies = [
        ("agents", "0031_mcp_apps"),
        ("modes", "0003_permission_groups"),
        ("auth", "0012_alter_user_first_name_max_length"),
    ]

    operations = [auditors_may_view("agents", "appaction")]
