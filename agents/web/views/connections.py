"""Settings → Connections: save (or remove) the named secrets of an MCP server that acts as each
user. Saving hands the user's turns that waited for it back to the runner."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from asgiref.sync import sync_to_async
from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.urls import reverse
from django.views.decorators.http import require_POST

from agents.approvals import connect_answered
from agents.submit import turn_submit
from agents.web.connections import server_of
from connections.store import disconnect, secrets_save

if TYPE_CHECKING:
    from agents.models import Turn


async def _user(request: HttpRequest):
    user = await request.auser()
    return user if user.is_authenticated else None


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
    resumed = await sync_to_async(connect_answered)(user=user, server=server)
    for turn in resumed:
        await turn_submit(_recorded(turn))
    told = f"Saved for {server}." + (" The conversation waiting for it goes on." if resumed else "")
    await sync_to_async(messages.success)(request, told)
    return _back(server)


@require_POST
async def connection_remove(request: HttpRequest, server: str) -> HttpResponse:
    user = await _user(request)
    if user is None:
        return HttpResponseRedirect(f"{reverse('login')}?next={reverse('settings')}")
    removed = await sync_to_async(disconnect)(user=user, server=server)
    text = f"Removed what you saved for {server}." if removed else f"Nothing was saved for {server}."
    await sync_to_async(messages.success)(request, text)
    return _back(server)
