"""`GET /metrics` (aptix/metrics.py's text) for a Prometheus scraper: from loopback, or from anywhere
with `Authorization: Bearer $APTIX_METRICS_TOKEN` (compared in constant time).

Loopback means the connection comes from this host *and* carries no forwarding header: behind a
proxy on the same host every request arrives from 127.0.0.1, and the proxy adds `X-Forwarded-For`
(or `Forwarded`, `X-Real-IP`), so a request through it needs the token like any other. The worker's
probe server (agents/run/health.py) asks the same question through `scrape_allowed`.
"""

from __future__ import annotations

import hmac
import ipaddress
from collections.abc import Mapping

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

from .metrics import CONTENT_TYPE, exposition

FORWARDING_HEADERS = ("x-forwarded-for", "forwarded", "x-real-ip")
REFUSED = "Metrics are served to loopback, or with Authorization: Bearer <APTIX_METRICS_TOKEN>.\n"


def _loopback(address: str | None) -> bool:
    try:
        return address is not None and ipaddress.ip_address(address).is_loopback
    except ValueError:
        return False


def scrape_allowed(remote_address: str | None, headers: Mapping[str, str], token: str | None) -> bool:
    """Whether a scrape from `remote_address` with `headers` (names lower-case) may read the metrics."""
    # A forwarding header present at all, even empty, says a proxy passed the request on (a proxy that
    # found no client address may still add it empty): only its absence is loopback's own.
    if _loopback(remote_address) and not any(name in headers for name in FORWARDING_HEADERS):
        return True
    if not token:
        return False
    scheme, _, given = headers.get("authorization", "").partition(" ")
    return scheme.lower() == "bearer" and hmac.compare_digest(given.strip().encode(), token.encode())


@never_cache
@require_GET
def metrics_view(request: HttpRequest) -> HttpResponse:
    headers = {name.lower(): value for name, value in request.headers.items()}
    if not scrape_allowed(request.META.get("REMOTE_ADDR"), headers, settings.APTIX_METRICS_TOKEN):
        return HttpResponse(REFUSED, status=403, content_type="text/plain; charset=utf-8")
    return HttpResponse(exposition(), content_type=CONTENT_TYPE)
