"""Probes for load balancers and orchestrators: `/healthz` (the process answers) and `/readyz` (what
its requests need answers: agents/run/health.py). No login, no session, nothing cached; the body names
each check's outcome and nothing about hosts, versions or secrets."""

from __future__ import annotations

from django.http import HttpRequest, JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

from agents.run.health import answer, answer_async


@never_cache
@require_GET
def healthz(request: HttpRequest) -> JsonResponse:
    status, body = answer(True, {})
    return JsonResponse(body, status=status)


@never_cache
@require_GET
async def readyz(request: HttpRequest) -> JsonResponse:
    status, body = await answer_async()
    return JsonResponse(body, status=status)
