"""The automations' JSON API. (Being written: each endpoint is replaced by its implementation.)"""

from django.http import Http404


def _todo(*args, **kwargs):
    raise Http404("Not built yet.")


automations = automation = automation_run = automation_trigger = automation_runs = inbox = _todo
