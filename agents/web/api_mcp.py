"""`GET /api/v1/mcp/servers`: the MCP servers of this deployment as the caller sees them, each with
its state, whether it acts as each user with OAuth (`auth`), whether the caller has connected it and
where to connect it (`connectUrl`, for a per-user server)."""

from __future__ import annotations

from typing import Any

from asgiref.sync import sync_to_async
from django.http import HttpRequest, JsonResponse
from django.views.decorators.csrf import csrf_exempt

from agents.web.api_support import ApiError, authenticate
from agents.web.connections import connect_url, user_connections
from tools.mcp.config import McpConfigError, load_config
from tools.mcp.host import mcp_status


def servers_for(user_id: int, base: str) -> list[dict[str, Any]]:
    from django.conf import settings

    try:
        config = load_config(settings.APTIX_MCP_CONFIG)
    except McpConfigError:
        return []
    states = {status.name: status.state for status in mcp_status()}
    mine = {c.server: c for c in user_connections(user_id)}
    found = []
    for server in config.servers:
        connection = mine.get(server.name)
        found.append(
            {
                "name": server.name,
                "state": "disabled" if server.disabled else states.get(server.name, "unknown"),
                "auth": "oauth" if server.auth is not None else None,
                "connected": connection.complete if connection else not server.per_user,
                "connectUrl": base + connect_url(server.name) if server.per_user else None,
            }
        )
    return found


@csrf_exempt
async def mcp_servers_api(request: HttpRequest) -> JsonResponse:
    try:
        user = await authenticate(request)
        if request.method != "GET":
            raise ApiError(405, "Use GET.")
    except ApiError as exc:
        return exc.response()
    base = request.build_absolute_uri("/").rstrip("/")
    return JsonResponse(await sync_to_async(servers_for)(user.pk, base), safe=False)
