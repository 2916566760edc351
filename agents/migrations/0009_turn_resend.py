# Edit and resend, retry, regenerate: how a turn's message came to be sent, and on
# the turns it replaced, the turn that replaced them (agents/conversations.py).

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("agents", "0008_session_housekeeping"),
    ]

    operations = [
        migrations.AddField(
            model_name="turn",
            name="origin",
            field=models.CharField(
                choices=[
                    ("message", "Message"),
                    ("edit", "Edited and resent"),
                    ("retry", "Retry"),
                    ("regenerate", "Regenerated"),
                ],
                default="message",
                max_length=16,
            ),
        ),
        migrations.AddField(
            model_name="turn",
            name="replaced_by",
            field=models.ForeignKey(
                blank=True,
                null=True,
                on_delete=django.db.models.deletion.SET_NULL,
                related_name="replaces",
                to="agents.turn",
            ),
        ),
    ]
