# A turn started on its own after a consented mode switch in the same session carries the request
# on in the new mode (agents/branching.py, turn_continue_after_switch).

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("agents", "0009_turn_trace"),
    ]

    operations = [
        migrations.AlterField(
            model_name="turn",
            name="origin",
            field=models.CharField(
                choices=[
                    ("message", "Message"),
                    ("edit", "Edited and resent"),
                    ("retry", "Retry"),
                    ("regenerate", "Regenerated"),
                    ("continued", "Continued after the switch"),
                ],
                default="message",
                max_length=16,
            ),
        ),
    ]
