"""Settings → Connections: save (or remove) the named secrets of an MCP server that acts as each
user, or connect an OAuth server (`/mcp/oauth/connect/<server>/` answers 302 to its authorization
server; `/mcp/oauth/callback` stores the tokens; `/mcp/oauth/client-metadata.json` is Aptix's client
ID metadata document, its client id where an authorization server takes one). Connecting hands the
user's turns that waited for it back to the runner. `GET /api/v1/mcp/servers` lists the servers and
whether the caller is connected to each."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from asgiref.sync import sync_to_async
from django.conf import settings
from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseBadRequest, HttpResponseRedirect, JsonResponse
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from agents.approvals import connect_answered
from agents.submit import turn_submit
from agents.web.connections import server_of
from aptix.bearer import RateLimited, bearer_user
from connections.store import disconnect, secrets_save
from tools.mcp import OAuthError, authorization_complete, authorization_start, client_metadata, pending_server

if TYPE_CHECKING:
    from agents.models import Turn


async def _user(request: HttpRequest):
    user = await request.auser()
    return user if user.is_authenticated else None


def _bearer_user(request: HttpRequest):
    if not request.headers.get("Authorization"):
        return None
    try:
        return bearer_user(request)
    except RateLimited:
        return None


def _recorded(turn: Turn) -> Callable[[], Turn]:
    """The turn to run, recorded already (connect_answered decided its approvals)."""
    return lambda: turn


def _back(server: str) -> HttpResponseRedirect:
    return HttpResponseRedirect(f"{reverse('settings')}#connection-{server}")


@require_POST
async def connection_save(request: HttpRequest, server: str) -> HttpResponse:
    user = await _user(request)
    if user is None:
        return HttpResponseRedirect(f"{reverse('login')}?next={reverse('settings')}")
    config = await sync_to_async(server_of)(server)
    if config is None:
        raise Http404("No MCP server of that name acts as each user.")
    values = {name: request.POST.get(name, "") for name in config.user_variables}
    await sync_to_async(secrets_save)(user=user, server=server, values=values)
    resumed = await _resume(user, server)
    told = f"Saved for {server}." + (" The conversation waiting for it goes on." if resumed else "")
    await sync_to_async(messages.success)(request, told)
    return _back(server)


async def _resume(user, server: str) -> int:
    resumed = await sync_to_async(connect_answered)(user=user, server=server)
    for turn in resumed:
        await turn_submit(_recorded(turn))
    return len(resumed)


@require_GET
async def oauth_connect(request: HttpRequest, server: str) -> HttpResponse:
    """302 to the authorization server (signed in, or with an API token)."""
    user = await _user(request) or await sync_to_async(_bearer_user)(request)
    if user is None:
        return HttpResponseRedirect(f"{reverse('login')}?next={request.path}")
    config = await sync_to_async(server_of)(server)
    if config is None or config.auth is None:
        raise Http404("No MCP server of that name connects with OAuth.")
    callback = request.build_absolute_uri(reverse("mcp-oauth-callback"))
    try:
        target = await sync_to_async(authorization_start)(
            config, user_id=user.pk, redirect_uri=callback, metadata_url=_metadata_url(request)
        )
    except OAuthError as exc:
        await sync_to_async(messages.error)(request, str(exc))
        return _back(server)
    return HttpResponseRedirect(target)


def _metadata_url(request: HttpRequest) -> str:
    """Where this deployment serves its client ID metadata document; "" where an authorization server
    may not fetch it: the specification wants an https URL (DEBUG allows http, for development)."""
    url = request.build_absolute_uri(reverse("mcp-oauth-client-metadata"))
    return url if url.startswith("https://") or settings.DEBUG else ""


@require_GET
def oauth_client_metadata(request: HttpRequest) -> JsonResponse:
    """Aptix's client ID metadata document (public: authorization servers fetch it, signed in or not)."""
    document = client_metadata(
        metadata_url=request.build_absolute_uri(reverse("mcp-oauth-client-metadata")),
        redirect_uri=request.build_absolute_uri(reverse("mcp-oauth-callback")),
        home=request.build_absolute_uri("/"),
    )
    response = JsonResponse(document)
    response["Cache-Control"] = "public, max-age=3600"
    return response


@require_GET
async def oauth_callback(request: HttpRequest) -> HttpResponse:
    user = await _user(request)
    state, code = request.GET.get("state", ""), request.GET.get("code", "")
    server = await sync_to_async(pending_server)(state) if state else None
    config = await sync_to_async(server_of)(server) if server else None
    if user is None or config is None or not code:
        error = request.GET.get("error_description") or request.GET.get("error") or "unknown or expired attempt"
        return HttpResponseBadRequest(f"The connection was not made: {error}.")
    try:
        await sync_to_async(authorization_complete)(config, user=user, state=state, code=code)
    except OAuthError as exc:
        return HttpResponseBadRequest(str(exc))
    resumed = await _resume(user, config.name)
    told = f"Connected {config.name}." + (" The conversation waiting for it goes on." if resumed else "")
    await sync_to_async(messages.success)(request, told)
    return _back(config.name)


@require_POST
async def connection_remove(request: HttpRequest, server: str) -> HttpResponse:
    user = await _user(request)
    if user is None:
        return HttpResponseRedirect(f"{reverse('login')}?next={reverse('settings')}")
    removed = await sync_to_async(disconnect)(user=user, server=server)
    text = f"Removed what you saved for {server}." if removed else f"Nothing was saved for {server}."
    await sync_to_async(messages.success)(request, text)
    return _back(server)
