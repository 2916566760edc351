"""The origin MCP Apps are framed from (APTIX_MCP_APPS_ORIGIN), kept to them alone.

An app is a server's HTML: it runs in a sandboxed frame whose page (the sandbox proxy,
agents/web/views/apps.py) comes from another origin than Aptix's, so nothing in it can reach Aptix's
pages, cookies or storage. That origin is another host name or port of this same server; a browser
sends Aptix's cookies to another port of the same host too, so on it this middleware answers the
apps' paths (APPS_PATHS) and nothing else, and on Aptix's own origin it refuses those paths.

`serve_apps_on` is how `manage.py aptix_serve` serves them with nothing configured: on its port + 1.
"""

from __future__ import annotations

from collections.abc import Callable
from urllib.parse import urlsplit

from django.conf import settings
from django.http import HttpRequest, HttpResponse, HttpResponseNotFound

APPS_PATHS = ("/mcp-apps/", f"{settings.STATIC_URL}js/mcp_app_sandbox.js")


def apps_origin() -> str:
    return str(getattr(settings, "APTIX_MCP_APPS_ORIGIN", "") or "")


def serve_apps_on(bind: str, port: int) -> str:
    """With no APTIX_MCP_APPS_ORIGIN, the origin of `bind`'s next port (the one aptix_serve listens on
    too), set for this process and allowed to frame its pages: what the serve command calls. An
    address that listens everywhere is reached as the loopback address (as `make run` is)."""
    if not apps_origin():
        host = "127.0.0.1" if bind in ("0.0.0.0", "::", "") else bind
        settings.APTIX_MCP_APPS_ORIGIN = f"http://{host}:{port + 1}"
        allow_framing(settings.APTIX_MCP_APPS_ORIGIN)
    return apps_origin()


def allow_framing(origin: str) -> None:
    """Aptix's pages may frame `origin` (its CSP's frame-src), and requests for it are let in."""
    directives = settings.CONTENT_SECURITY_POLICY["DIRECTIVES"]
    directives["frame-src"] = [*directives.get("frame-src", []), origin]
    host = urlsplit(origin).hostname or ""
    if "*" not in settings.ALLOWED_HOSTS and host not in settings.ALLOWED_HOSTS:
        settings.ALLOWED_HOSTS = [*settings.ALLOWED_HOSTS, host]


def on_apps_origin(request: HttpRequest) -> bool:
    origin = apps_origin()
    return bool(origin) and request.get_host().lower() == urlsplit(origin).netloc.lower()


class AppsOriginOnly:
    """On the apps' origin only the apps' paths; on Aptix's own, none of them (module docstring)."""

    def __init__(self, get_response: Callable) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        apps_path = request.path.startswith(APPS_PATHS)
        if apps_path != on_apps_origin(request):
            return HttpResponseNotFound("Not found.", content_type="text/plain")
        return self.get_response(request)
