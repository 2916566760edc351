"""Admin page: the status of this process's MCP servers (starting, ready with N tools, failed with
the error, restarting) — the same data as `manage.py mcp_status` and the session's Tools panel."""

from __future__ import annotations

from django.conf import settings
from django.contrib import admin
from django.template.response import TemplateResponse

from .mcp.host import mcp_config_error, mcp_status


def mcp_status_view(request):
    context = {
        **admin.site.each_context(request),
        "title": "MCP servers",
        "servers": mcp_status(),
        "config_error": mcp_config_error(),
        "config_path": settings.APTIX_MCP_CONFIG,
        "autostart": settings.APTIX_MCP_AUTOSTART,
    }
    return TemplateResponse(request, "admin/mcp_status.html", context)
