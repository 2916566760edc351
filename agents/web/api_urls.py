from django.urls import path

from . import api, api_resend, api_usage

urlpatterns = [
    path("agent/execute", api.agent_execute, name="api-agent-execute"),
    path("turns/<str:turn_id>/cancel", api.turn_cancel_api, name="api-turn-cancel"),
    path("turns/<str:turn_id>/resend", api_resend.turn_resend_api, name="api-turn-resend"),
    path("usage", api_usage.usage_api, name="api-usage"),
]
