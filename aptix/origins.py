"""The websocket's Origin check, port included.

Channels' AllowedHostsOriginValidator compares only the host name with ALLOWED_HOSTS, so a page on
another port of the same host (`http://localhost:9999`, any other local service) could open a socket
with the user's cookies. Here the Origin must be the server's own origin: its host *and port* equal
the Host header the socket arrived with (scheme http or https, as a TLS-terminating proxy may sit in
front) and its host is in ALLOWED_HOSTS, or it is one of CSRF_TRUSTED_ORIGINS. It replaces Channels'
validator.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from channels.security.websocket import WebsocketDenier
from django.conf import settings
from django.http.request import validate_host

DEFAULT_PORTS = {"http": 80, "https": 443}


def _netloc(scheme: str, host: str) -> tuple[str, int] | None:
    parts = urlsplit(f"{scheme}://{host}")
    try:
        port = parts.port or DEFAULT_PORTS.get(scheme)
    except ValueError:
        return None
    return ((parts.hostname or "").lower(), port) if parts.hostname and port else None


def origin_allowed(origin: str, host: str | None) -> bool:
    """Whether a socket from page `origin`, sent to `host` (its Host header), is trusted, or is
    same-origin (host and port) with a host in ALLOWED_HOSTS."""
    origin = origin.rstrip("/")
    if origin in {o.rstrip("/") for o in settings.CSRF_TRUSTED_ORIGINS}:
        return True
    parts = urlsplit(origin)
    if parts.scheme not in DEFAULT_PORTS or not parts.hostname:
        return False
    if not validate_host(parts.hostname, settings.ALLOWED_HOSTS):  # read per socket: settings may change
        return False
    if host is None:  # no Host header (not a browser through a server): the host check alone decides
        return True
    return _netloc(parts.scheme, parts.netloc) == _netloc(parts.scheme, host)


class SameOriginValidator:
    """ASGI middleware: deny a websocket whose Origin is neither the server's own nor trusted."""

    def __init__(self, application: Any) -> None:
        self.application = application

    async def __call__(self, scope, receive, send):
        headers = dict(scope.get("headers") or [])
        origin, host = headers.get(b"origin"), headers.get(b"host")
        cross = origin is not None and not origin_allowed(
            origin.decode("latin-1"), host.decode("latin-1") if host else None
        )
        if scope["type"] == "websocket" and cross:
            return await WebsocketDenier()(scope, receive, send)
        return await self.application(scope, receive, send)
