# The files a turn's message carried (agents/attachments.py), each as it was when sent.

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("agents", "0012_turn_cost"),
    ]

    operations = [
        migrations.AddField(
            model_name="turn",
            name="files",
            field=models.JSONField(blank=True, default=list),
        ),
    ]
