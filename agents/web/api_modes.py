"""`GET /api/v1/modes`: the modes the token's user may use — the catalog of the team their new
conversations belong to (`api.api_team`, the team `/api/v1/agent/execute` starts them in), in the
catalog's order. `isDefault` marks the mode such a conversation starts in when it names none: the
team's own default when it set one that applies, else the catalog's (the user's Settings default is
the caller's choice, not the catalog's, and is not reflected here). `version` is the published
version's number."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from asgiref.sync import sync_to_async
from django.http import HttpRequest, JsonResponse
from django.views.decorators.csrf import csrf_exempt

from aptix.bearer import token_modes
from modes.catalog import default_mode_for_team, modes_for_team

from .api import api_team
from .api_support import ApiError, authenticate

if TYPE_CHECKING:
    from modes.models import AgentMode


def api_modes(*, user: Any, limited_to: tuple[str, ...] = ()) -> list[AgentMode]:
    """The active modes a program of the user may use: those of the team their new conversations
    belong to (none without a team), within the token's mode limits `limited_to` (() for none). The
    MCP server's tools and the A2A agent's skills are these too."""
    team = api_team(user)
    modes = [] if team is None else modes_for_team(team)
    return [mode for mode in modes if not limited_to or mode.key in limited_to]


def modes_json(user: Any, limited_to: tuple[str, ...] = ()) -> list[dict[str, Any]]:
    team = api_team(user)
    if team is None:
        raise ApiError(403, "You are not a member of any team; ask an administrator to add you.")
    default = default_mode_for_team(team)
    return [
        {
            "key": mode.key,
            "name": mode.display_name,
            "description": mode.description,
            "isDefault": mode.key == default,
            "execution": mode.execution or None,  # None: a session keeps its own Ask or Agent
            "version": mode.version,
        }
        for mode in api_modes(user=user, limited_to=limited_to)
    ]


@csrf_exempt
async def modes_api(request: HttpRequest) -> JsonResponse:
    try:
        user = await authenticate(request)
        if request.method != "GET":
            raise ApiError(405, "Use GET.")
        modes = await sync_to_async(modes_json)(user, token_modes(request))
    except ApiError as exc:
        return exc.response()
    return JsonResponse(modes, safe=False)
