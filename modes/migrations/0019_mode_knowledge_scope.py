# A mode's knowledge scope: what knowledge_search searches in it. Every version kept so far gets the
# default, "project", in its snapshot, so the next version's diff shows no change that was never made.

import modes.models
import modes.validators
from django.db import migrations, models


def forwards(apps, schema_editor):
    ModeVersion = apps.get_model("modes", "ModeVersion")
    for version in ModeVersion.objects.all():
        if "knowledge_scope" not in version.snapshot:
            version.snapshot = {**version.snapshot, "knowledge_scope": "project"}
            version.save(update_fields=["snapshot"])


class Migration(migrations.Migration):

    dependencies = [
        ('modes', '0018_seed_tests_and_checks'),
    ]

    operations = [
        migrations.AddField(
            model_name='agentmode',
            name='knowledge_scope',
            field=models.JSONField(blank=True, default=modes.models.default_knowledge_scope, help_text='What knowledge_search searches in this mode: "project" (the session\'s project), "none", or a list of project ids or names it always searches (a company-wide policy library). A search never returns a passage of a project the user is not a member of.', validators=[modes.validators.validate_knowledge_scope], verbose_name='Knowledge scope'),
        ),
        migrations.RunPython(forwards, migrations.RunPython.noop),
    ]
