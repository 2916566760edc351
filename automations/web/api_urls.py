"""The automations' JSON API (mounted under /api/v1/ by aptix/urls.py): docs/automations.md#api."""

from django.urls import path

from . import api

urlpatterns = [
    path("automations", api.automations, name="api-automations"),
    path("automations/<str:automation_id>", api.automation, name="api-automation"),
    path("automations/<str:automation_id>/run", api.automation_run, name="api-automation-run"),
    path("automations/<str:automation_id>/trigger", api.automation_trigger, name="api-automation-trigger"),
    path("automations/<str:automation_id>/runs", api.automation_runs, name="api-automation-runs"),
    path("inbox", api.inbox, name="api-inbox"),
]
