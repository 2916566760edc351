# The trace (system prompt, tool schemas, earlier turns sent) stored once per turn.
# Numbered 0009 next to 0009_turn_resend (made at the same time); it follows that one so the graph
# has one leaf.

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("agents", "0009_turn_resend"),
    ]

    operations = [
        migrations.AddField(
            model_name="turn",
            name="trace",
            field=models.JSONField(blank=True, default=dict),
        ),
    ]
