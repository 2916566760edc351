"""The composer's `/` menu (static/js/prompts.js): the user's saved prompts (their own and their
teams' shared ones, agents/prompts/) and the MCP servers' prompts the signed-in user may get, and one
filled or got with the values of its form, and the values a server suggests for one of an MCP
prompt's arguments as the user types it (MCP completion), as JSON for the script. The same lists and checks as the
API's (agents/web/api_prompts.py, api_mcp.py); the POSTs carry the page's CSRF token."""

from __future__ import annotations

import json
from typing import Any

from asgiref.sync import sync_to_async
from django.core.exceptions import ValidationError
from django.http import HttpRequest, JsonResponse
from django.views.decorators.http import require_GET, require_POST

from aptix.teams import team_list_for_user
from tools.mcp import PromptRefused

from ..api_mcp import completion_for, prompt_get_for, prompts_for
from ..api_prompts import STATUSES, prompt_fill, prompts_json
from ..api_support import ApiError

DESCRIPTION_CHARS = 120  # of a saved prompt's text, shown under its title in the menu


def _menu_entry(prompt: dict[str, Any]) -> dict[str, Any]:
    text = " ".join(prompt["text"].split())
    short = text if len(text) <= DESCRIPTION_CHARS else text[: DESCRIPTION_CHARS - 1] + "…"
    return {
        "id": prompt["id"],
        "title": prompt["title"],
        "description": short,
        "variables": prompt["variables"],
        "team": prompt["teamName"],
    }


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
    saved = await sync_to_async(prompts_json)(user)
    return JsonResponse(
        {"prompts": await sync_to_async(prompts_for)(user.pk), "saved": [_menu_entry(p) for p in saved]}
    )


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


@require_POST
async def prompt_complete(request: HttpRequest, server: str) -> JsonResponse:
    """What `server` suggests for an argument of the prompt form as the user types (`{"values",
    "hasMore"}`, the API's POST /api/v1/mcp/complete/<server>)."""
    user, refusal = await _member(request)
    if refusal is not None:
        return refusal
    try:
        body = json.loads(request.body or b"{}")
    except ValueError:
        return _refused(400, "The request body must be a JSON object.")
    try:
        return JsonResponse(await completion_for(user, server, body))
    except PromptRefused as exc:
        return _refused(exc.status, exc.message, exc.field)


@require_POST
async def saved_prompt_use(request: HttpRequest, prompt_id: str) -> JsonResponse:
    """A saved prompt filled with the `{"variables": {…}}` of its form, counted as one use."""
    user, refusal = await _member(request)
    if refusal is not None:
        return refusal
    try:
        variables = json.loads(request.body or b"{}").get("variables")
    except (ValueError, AttributeError):
        return _refused(400, "The request body must be a JSON object.")
    try:
        return JsonResponse(await sync_to_async(prompt_fill)(user, prompt_id, variables))
    except ApiError as exc:
        return exc.response()
    except ValidationError as exc:
        return ApiError.refused(exc, statuses=STATUSES).response()
