from django.urls import path

from . import api, api_mcp, api_resend

urlpatterns = [
    path("agent/execute", api.agent_execute, name="api-agent-execute"),
    path("turns/<str:turn_id>/cancel", api.turn_cancel_api, name="api-turn-cancel"),
    path("mcp/servers", api_mcp.mcp_servers_api, name="api-mcp-servers"),
    path("turns/<str:turn_id>/resend", api_resend.turn_resend_api, name="api-turn-resend"),
]
