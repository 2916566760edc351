"""Routing tests and checks for the seeded modes (modes/seed.py SEED_TESTS_AND_CHECKS has them for
reading; they are frozen here, so later edits of seed.py do not change what this migration does).

A mode gets them only where it has none yet (a curator's own are kept). Every version recorded before
the fields existed gains them in its snapshot as empty lists (it had none), and a seed mode's published
version gains the values its row now holds, so the row and its published version stay equal. Backwards
empties them where they are still the seeded ones."""

from __future__ import annotations

from django.db import migrations

SEEDED = {'general': {'test_utterances': ['Give me three ideas for a team offsite activity',
                                 'Proofread this sentence for grammar mistakes',
                                 'Write a short thank-you note to a colleague who covered my shift',
                                 'What is the date next Friday?',
                                 'Turn these meeting notes into a list of action items'],
             'checks': [{'prompt': 'Hello there',
                         'execution': 'ask',
                         'expect': {'contains': 'offline model'}},
                        {'prompt': 'What modes are there?',
                         'execution': 'ask',
                         'expect': {'tool': 'agent_list_modes', 'contains': 'Data Analysis'}}]},
 'ddr-authoring': {'test_utterances': ['Start a new DDR about retiring the legacy login service',
                                       'Which section of the design record should list the non-goals?',
                                       'Check whether this decision record has testable contract clauses',
                                       'Write the purpose and scope for a DDR on rate limiting',
                                       'Mark DDR TUL-012 as superseded by TUL-015'],
                   'checks': [{'prompt': 'Draft a DDR for our new caching layer',
                               'execution': 'ask',
                               'expect': {'tool': 'document_write',
                                          'contains': 'DDR: Our new caching layer'}},
                              {'prompt': 'Please draft a DDR for API versioning',
                               'execution': 'agent',
                               'expect': {'tool': 'document_write', 'contains': 'DDR: API versioning'}}]},
 'workflow-authoring': {'test_utterances': ['Automate the steps for closing a customer support ticket',
                                            'Design the approval chain for travel expense claims',
                                            'What should the retry policy be when the payroll export step '
                                            'fails?',
                                            'Sketch the trigger and the steps of a contract renewal pipeline',
                                            'Add an escalation to the on-call manager when nobody approves '
                                            'within a day'],
                        'checks': [{'prompt': 'Hello',
                                    'execution': 'ask',
                                    'expect': {'contains': 'offline model', 'not_contains': 'Sorry'}},
                                   {'prompt': 'What modes are there?',
                                    'execution': 'agent',
                                    'expect': {'tool': 'agent_list_modes'}}]},
 'data-analysis': {'test_utterances': ['How many orders did we get last month?',
                                       'Which product category brings in the most revenue?',
                                       'List the top customers by total spend',
                                       'What is the average order value per month?',
                                       'Show revenue per region as a table'],
                   'checks': [{'prompt': 'What was the revenue by month?',
                               'execution': 'agent',
                               'expect': {'tool': 'sql__query', 'not_contains': 'Sorry'}},
                              {'prompt': 'What modes are there?',
                               'execution': 'ask',
                               'expect': {'tool': 'agent_list_modes'}}]}}


def _published(apps, mode):
    ModeVersion = apps.get_model("modes", "ModeVersion")
    return ModeVersion.objects.filter(mode=mode, state="published").first()


def forwards(apps, schema_editor):
    AgentMode = apps.get_model("modes", "AgentMode")
    ModeVersion = apps.get_model("modes", "ModeVersion")
    for version in ModeVersion.objects.all():
        if "test_utterances" not in version.snapshot or "checks" not in version.snapshot:
            version.snapshot = {"test_utterances": [], "checks": [], **version.snapshot}
            version.save(update_fields=["snapshot"])
    for mode in AgentMode.objects.filter(key__in=list(SEEDED)):
        if mode.test_utterances or mode.checks:
            continue
        mode.test_utterances = SEEDED[mode.key]["test_utterances"]
        mode.checks = SEEDED[mode.key]["checks"]
        mode.save(update_fields=["test_utterances", "checks"])
        published = _published(apps, mode)
        if published is not None:
            published.snapshot = {**published.snapshot, "test_utterances": mode.test_utterances, "checks": mode.checks}
            published.save(update_fields=["snapshot"])


def backwards(apps, schema_editor):
    AgentMode = apps.get_model("modes", "AgentMode")
    for mode in AgentMode.objects.filter(key__in=list(SEEDED)):
        seeded = SEEDED[mode.key]
        if mode.test_utterances == seeded["test_utterances"] and mode.checks == seeded["checks"]:
            mode.test_utterances, mode.checks = [], []
            mode.save(update_fields=["test_utterances", "checks"])


class Migration(migrations.Migration):
    dependencies = [("modes", "0017_mode_tests_and_checks")]

    operations = [migrations.RunPython(forwards, backwards)]
