from django.db import migrations, models

import modes.validators


class Migration(migrations.Migration):
    dependencies = [("modes", "0016_team_default_mode")]

    operations = [
        migrations.AddField(
            model_name="agentmode",
            name="test_utterances",
            field=models.JSONField(
                blank=True,
                default=list,
                help_text="Requests that belong to this mode, kept for routing tests: unlike the example "
                "utterances they are never shown to the model.",
                validators=[modes.validators.validate_test_utterances],
            ),
        ),
        migrations.AddField(
            model_name="agentmode",
            name="checks",
            field=models.JSONField(
                blank=True,
                default=list,
                help_text='What a turn in this mode must do: a list of {"prompt", "execution": "ask"|"agent", '
                '"expect": {"tool", "contains", "not_contains", "status"}}.',
                validators=[modes.validators.validate_checks],
            ),
        ),
    ]
