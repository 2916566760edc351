"""The automations' pages and the inbox. (Being written: each view is replaced by its page.)"""

from django.http import Http404


def _todo(*args, **kwargs):
    raise Http404("Not built yet.")


automation_list = automation_new = automation_detail = automation_edit = _todo
automation_run_now = automation_toggle = automation_remove = _todo
inbox_page = inbox_bell = inbox_decide = inbox_dismiss = _todo
