"""Admin page: the status of this process's MCP servers (starting, ready with N tools, failed with
the error, restarting) — the same data as `manage.py mcp_status` and the session's Tools panel —
with each server's protocol version, the capabilities it and Aptix declared, its
instructions and last log lines, a Reload button (re-read mcp.json, restart only what changed),
a Restart button per server and Restart all (for a server whose code changed: here at once, and in
every other web and worker process through the restart request file, tools/mcp/reload.py). Staff
only (`admin_view`), POST with CSRF for the buttons."""

from __future__ import annotations

from django.conf import settings
from django.contrib import admin, messages
from django.http import HttpResponseBadRequest
from django.shortcuts import redirect
from django.template.response import TemplateResponse
from django.views.decorators.http import require_http_methods

from .mcp import RELOAD_POLL, mcp_config_error, mcp_host, mcp_status

NO_HOST = "No MCP host runs in this process (APTIX_MCP_AUTOSTART is off): nothing to reload or restart."
CANNOT_RESTART = 'MCP server "{}" cannot be restarted here: it is not configured, disabled, or its entry is broken.'
ELSEWHERE = "The other web and worker processes restart {} within {:g} s."


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
        "instructions_chars": settings.APTIX_MCP_INSTRUCTIONS_CHARS,
    }
    return TemplateResponse(request, "admin/mcp_status.html", context)


def _mcp_action(request):
    host, action, server = mcp_host(), request.POST.get("action"), request.POST.get("server", "")
    if action not in ("reload", "restart", "restart-all"):
        return HttpResponseBadRequest("Unknown action.")
    if host is None:
        messages.error(request, NO_HOST)
    elif action == "reload":
        result = host.reload()
        (messages.error if result.error else messages.success)(request, result.describe())
    elif action == "restart-all":
        restarted = host.request_restart(None)
        messages.success(request, f"Restarting MCP servers {', '.join(restarted) or '(none is enabled)'}.")
        _elsewhere(request, host, "them")
    elif host.request_restart([server]):
        messages.success(request, f'Restarting MCP server "{server}".')
        _elsewhere(request, host, "it")
    else:
        messages.error(request, CANNOT_RESTART.format(server))
    return redirect("admin-mcp-status")


def _elsewhere(request, host, which: str) -> None:
    if host.restart_file is not None:  # a host of this deployment, not one a test made
        messages.info(request, ELSEWHERE.format(which, RELOAD_POLL))
