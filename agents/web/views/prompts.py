"""The composer's `/` menu (static/js/prompts.js): the MCP servers' prompts the signed-in user may
get, and one got with the arguments of its form, as JSON for the script. The same lists and checks
as the API's (agents/web/api_mcp.py); the POST carries the page's CSRF token."""

from __future__ import annotations

import json
from typing import Any

from asgiref.sync import sync_to_async
from django.http import HttpRequest, JsonResponse
from django.views.decorators.http import require_GET, require_POST

from aptix.teams import team_list_for_user
from tools.mcp import PromptRefused

from ..api_mcp import prompt_get_for, prompts_for


def _refused(status: int, message: str, field: str | None = None) -> JsonResponse:
    return JsonResponse({"error": {"message": message, "field": field}}, status=status)


async def _member(request: HttpRequest) -> tuple[Any, JsonResponse | None]:
    """The signed-in user, and None when they may use prompts, else the JSON refusal (not a login
    redirect: the script shows it)."""
    user = await request.auser()
    if not user.is_authenticated:
        return user, _refused(401, "You are signed out. Sign in again.")
    if not await sync_to_async(lambda: team_list_for_user(user=user).exists())():
        return user, _refused(403, "You are not a member of any team; ask an administrator to add you.")
    return user, None


@require_GET
async def prompt_list(request: HttpRequest) -> JsonResponse:
    user, refusal = await _member(request)
    if refusal is not None:
        return refusal
    return JsonResponse({"prompts": await sync_to_async(prompts_for)(user.pk)})


@require_POST
async def prompt_get(request: HttpRequest, server: str, name: str) -> JsonResponse:
    user, refusal = await _member(request)
    if refusal is not None:
        return refusal
    try:
        arguments = json.loads(request.body or b"{}").get("arguments")
    except (ValueError, AttributeError):
        return _refused(400, "The request body must be a JSON object.")
    try:
        return JsonResponse(await prompt_get_for(user, server, name, arguments))
    except PromptRefused as exc:
        return _refused(exc.status, exc.message, exc.field)
