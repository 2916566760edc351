"""`GET /api/v1/mcp/servers`: the MCP servers of this deployment as the caller sees them, each with
its state, whether it acts as each user with OAuth (`auth`), whether the caller has connected it and
where to connect it (`connectUrl`, for a per-user server). `GET /api/v1/mcp/prompts` and `POST
/api/v1/mcp/prompts/<server>/<name>`: the servers' prompts, and one got with its arguments. `POST
/api/v1/mcp/complete/<server>`: the values a server suggests for a prompt's or URI template's argument."""

from __future__ import annotations

from typing import Any

from asgiref.sync import sync_to_async
from django.http import HttpRequest, JsonResponse
from django.views.decorators.csrf import csrf_exempt

from agents.web.api_support import ApiError, authenticate, json_body
from agents.web.connections import connect_url, user_connections
from aptix.teams import team_list_for_user
from tools.mcp import McpConfigError, PromptRefused, load_config, mcp_host, mcp_status, not_offered, parse_request


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


# --- prompts (McpHost.prompts, get_prompt): the composer's `/` menu reads the same --------------------------------


def usable_servers(user_id: int) -> set[str]:
    """The servers the user may get prompts and completions from: every shared server, and a
    per-user server once the user has connected it (it is asked over their own connection)."""
    from django.conf import settings

    try:
        config = load_config(settings.APTIX_MCP_CONFIG)
    except McpConfigError:
        return set()
    mine = {c.server for c in user_connections(user_id) if c.complete}
    return {s.name for s in config.servers if not s.disabled and (not s.per_user or s.name in mine)}


def prompts_for(user_id: int) -> list[dict[str, Any]]:
    """The prompts of the running servers the user may get them from (usable_servers)."""
    usable = usable_servers(user_id)
    host = mcp_host()
    return [prompt for prompt in host.prompts() if prompt["server"] in usable] if host is not None else []


async def prompt_get_for(user: Any, server: str, name: str, arguments: Any) -> dict[str, Any]:
    """The prompt rendered for `user` (raises PromptRefused): only one that `prompts_for` lists."""
    listed = await sync_to_async(prompts_for)(user.pk)
    if not any(p["server"] == server and p["name"] == name for p in listed):
        raise not_offered(server, name)
    host = mcp_host()
    if host is None:
        raise not_offered(server, name)
    return (await host.get_prompt(server, name, arguments, user_id=user.pk)).as_json()


async def completion_for(user: Any, server: str, body: Any) -> dict[str, Any]:
    """`{"values", "hasMore"}`: what `server` suggests for the argument `body` names (completion.py's
    request shape), only for a server the user may use (else 404, as if it were not there); a server
    without the `completions` capability suggests nothing. Raises PromptRefused."""
    request = parse_request(body)
    host = mcp_host()
    if host is None or server not in await sync_to_async(usable_servers)(user.pk):
        raise PromptRefused(404, f'No MCP server "{server}" here offers completions to you.', "server")
    return (await host.complete(server, request, user_id=user.pk)).as_json()


async def _team_member(user: Any) -> None:
    if not await sync_to_async(lambda: team_list_for_user(user=user).exists())():
        raise ApiError(403, "You are not a member of any team; ask an administrator to add you.")


@csrf_exempt
async def mcp_prompts_api(request: HttpRequest) -> JsonResponse:
    """`GET /api/v1/mcp/prompts`: `{"prompts": [{"server", "name", "title", "description",
    "arguments": [{"name", "title", "description", "required"}]}]}`."""
    try:
        user = await authenticate(request)
        if request.method != "GET":
            raise ApiError(405, "Use GET.")
        await _team_member(user)
    except ApiError as exc:
        return exc.response()
    return JsonResponse({"prompts": await sync_to_async(prompts_for)(user.pk)})


@csrf_exempt
async def mcp_prompt_api(request: HttpRequest, server: str, name: str) -> JsonResponse:
    """`POST /api/v1/mcp/prompts/<server>/<name>` with `{"arguments": {…}}`: `{"server", "name",
    "description", "messages", "text"}` (`text`: what the composer inserts)."""
    try:
        user = await authenticate(request)
        if request.method != "POST":
            raise ApiError(405, "Use POST.")
        await _team_member(user)
        body = json_body(request.body)
        return JsonResponse(await prompt_get_for(user, server, name, body.get("arguments")))
    except ApiError as exc:
        return exc.response()
    except PromptRefused as exc:
        return ApiError(exc.status, exc.message, exc.field).response()


@csrf_exempt
async def mcp_complete_api(request: HttpRequest, server: str) -> JsonResponse:
    """`POST /api/v1/mcp/complete/<server>` with `{"ref": {"type": "prompt", "name"} | {"type":
    "resource", "uri"}, "argument": {"name", "value"}, "context": {"arguments": {…}}}`: `{"values":
    [...], "hasMore": bool}` (MCP `completion/complete`)."""
    try:
        user = await authenticate(request)
        if request.method != "POST":
            raise ApiError(405, "Use POST.")
        await _team_member(user)
        return JsonResponse(await completion_for(user, server, json_body(request.body)))
    except ApiError as exc:
        return exc.response()
    except PromptRefused as exc:
        return ApiError(exc.status, exc.message, exc.field).response()
