"""Admin page: the status of this process's MCP servers (starting, ready with N tools, failed with
the error, restarting) — the same data as `manage.py mcp_status` and the session's Tools panel —
with each server's last log lines, a Reload button (re-read mcp.json, restart only what changed)
and a Restart button per server. Staff only (`admin_view`), POST with CSRF for the buttons."""

from __future__ import annotations

from django.conf import settings
from django.contrib import admin, messages
from django.http import HttpResponseBadRequest
from django.shortcuts import redirect
from django.template.response import TemplateResponse
from django.views.decorators.http import require_http_methods

from .mcp.host import mcp_config_error, mcp_host, mcp_status

NO_HOST = "No MCP host runs in this process (APTIX_MCP_AUTOSTART is off): nothing to reload or restart."
CANNOT_RESTART = 'MCP server "{}" cannot be restarted here: it is not configured, disabled, or its entry is broken.'


@require_http_methods(["GET", "POST"])
def mcp_status_view(request):
    if request.method == "POST":
        return _mcp_action(request)
    host = mcp_host()
    context = {
        **admin.site.each_context(request),
        "title": "MCP servers",
        "servers": [(status, host.logs(status.name) if host else None) for status in mcp_status()],
        "config_error": mcp_config_error(),
        "config_path": settings.APTIX_MCP_CONFIG,
        "autostart": settings.APTIX_MCP_AUTOSTART,
    }
    return TemplateResponse(request, "admin/mcp_status.html", context)


def _mcp_action(request):
    host, action, server = mcp_host(), request.POST.get("action"), request.POST.get("server", "")
    if action not in ("reload", "restart"):
        return HttpResponseBadRequest("Unknown action.")
    if host is None:
        messages.error(request, NO_HOST)
    elif action == "reload":
        result = host.reload()
        (messages.error if result.error else messages.success)(request, result.describe())
    elif host.restart(server):
        messages.success(request, f'Restarting MCP server "{server}".')
    else:
        messages.error(request, CANNOT_RESTART.format(server))
    return redirect("admin-mcp-status")
