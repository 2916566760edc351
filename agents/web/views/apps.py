"""MCP Apps in the conversation: what the page's host script (static/js/mcp_apps.js) asks for an app
shown on a tool card, and the sandbox proxy page the app runs in, on the apps' own origin
(aptix/apps_origin.py). What an app may do, and its audit, is agents/mcp_apps/services.py.

The host script reads the app (its HTML, kept when the tool ran, and what the tool got and gave) and
frames the proxy page from the apps' origin; the proxy puts the HTML in an inner frame sandboxed
without `allow-same-origin`, under the Content-Security-Policy its resource declared (tools/mcp/apps.py
frame_policy), sent as this page's header and inherited by the inner frame. That policy travels
signed in the frame's URL, so the page serves nobody's data and no one can widen it. A teammate
reading a shared session gets the app without its calls (`interactive` false; the calls refuse).
"""

from __future__ import annotations

import json
from functools import partial
from typing import Any
from urllib.parse import quote, urlsplit

from asgiref.sync import sync_to_async
from csp.decorators import csp_exempt
from django.core import signing
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.templatetags.static import static
from django.urls import reverse
from django.views.decorators.clickjacking import xframe_options_exempt
from django.views.decorators.http import require_GET, require_POST

from aptix.apps_origin import apps_origin
from tools.mcp import frame_policy, stored_app

from ...mcp_apps.services import (
    DENIED,
    AppCard,
    AppRefused,
    app_actions,
    app_call,
    app_call_needs_approval,
    app_call_refused,
    app_card,
    app_context_set,
    app_message_sent,
    app_read,
    app_turn_idle,
)
from ...submit import turn_submit
from ...turns import turn_start
from .sessions import get_session_or_404

READ_ONLY = "This conversation is shared with you to read: its apps cannot act for you here."
FRAME_SALT = "aptix.mcp-app-frame"
FRAME_MAX_AGE = 3600  # seconds a frame's signed URL is good for (the page asks again on each load)


def _refused(status: int, message: str) -> JsonResponse:
    return JsonResponse({"error": message}, status=status)


def _card(request: HttpRequest, session_id: str, turn_id: str, *, write: bool) -> AppCard:
    session = get_session_or_404(request, session_id, read=not write)
    call_id = request.GET.get("call", "")
    return app_card(session, turn_id, call_id)


async def _signed_in_card(
    request: HttpRequest, session_id: str, turn_id: str, *, write: bool
) -> AppCard | JsonResponse:
    user = await request.auser()
    if not user.is_authenticated:
        return _refused(401, "Sign in first.")
    request.user = user
    try:
        return await sync_to_async(_card)(request, session_id, turn_id, write=write)
    except AppRefused as exc:
        return _refused(exc.status, exc.message)
    except Http404:
        return _refused(404, "No such session.")
    except PermissionDenied:  # a teammate's shared conversation: read, never acted in
        return _refused(403, READ_ONLY)


def _body(request: HttpRequest) -> dict[str, Any]:
    try:
        body = json.loads(request.body or b"{}")
    except ValueError:
        raise AppRefused(400, "The body must be JSON.") from None
    if not isinstance(body, dict):
        raise AppRefused(400, "The body must be a JSON object.")
    return body


@require_GET
async def mcp_app(request: HttpRequest, session_id: str, turn_id: str) -> JsonResponse:
    card = await _signed_in_card(request, session_id, turn_id, write=False)
    if isinstance(card, JsonResponse):
        return card
    app = card.app
    origin = apps_origin()
    if not origin:
        return _refused(503, "MCP Apps are not served here: set APTIX_MCP_APPS_ORIGIN (docs/mcp.md#mcp-apps).")
    html = await sync_to_async(stored_app)(str(app.get("sha256") or ""))
    if html is None:
        return _refused(404, str(app.get("error") or "The app's page is not kept any more."))
    calls = [
        {"tool": a.tool, "decision": a.decision, "ok": a.ok, "at": a.created_at.isoformat()}
        for a in await sync_to_async(app_actions)(card)
    ]
    host = request.build_absolute_uri("/").rstrip("/")
    csp = _not_ours(app.get("csp") or {}, {request.get_host().lower(), urlsplit(origin).netloc.lower()})
    signed = signing.dumps({"csp": csp, "host": host}, salt=FRAME_SALT, compress=True)
    base = reverse("mcp-app", args=[session_id, turn_id])
    query = f"?call={quote(card.call_id, safe='')}"
    return JsonResponse(
        {
            "html": html,
            "csp": csp,
            "permissions": app.get("permissions") or {},
            "prefersBorder": app.get("prefersBorder"),
            "frameUrl": f"{origin}{reverse('mcp-app-frame')}?p={signed}",
            "frameOrigin": origin,
            "toolInput": app.get("input") or {},
            "toolResult": app.get("result") or {"content": []},
            "tool": app.get("tool") or {},
            "server": card.server,
            "interactive": not getattr(card.session, "read_only", False),
            "calls": calls,  # what the app called so far, for the card's "Called by the app"
            **{f"{name}Url": f"{base}{name}/{query}" for name in ("call", "read", "context", "message")},
        }
    )


def _not_ours(csp: dict[str, list[str]], ours: set[str]) -> dict[str, list[str]]:
    """`csp` without Aptix's own origins (nor their websockets): an app reaches this server only
    through the host's bridge, whatever its resource declares."""
    kept = {key: [v for v in values if urlsplit(v).netloc.lower() not in ours] for key, values in csp.items()}
    return {key: values for key, values in kept.items() if values}


@require_POST
async def mcp_app_call(request: HttpRequest, session_id: str, turn_id: str) -> JsonResponse:
    """The app calls a tool of its server: 409 `{"approval": "required"}` when the policy asks the
    user first; `"approved": true|false` is their answer."""
    card = await _signed_in_card(request, session_id, turn_id, write=True)
    if isinstance(card, JsonResponse):
        return card
    try:
        body = _body(request)
        name, arguments = body.get("name"), body.get("arguments") or {}
        if not isinstance(name, str) or not name or not isinstance(arguments, dict):
            raise AppRefused(400, '"name" must be a tool\'s name and "arguments" an object.')
        await sync_to_async(app_turn_idle)(card)  # before asking the user anything
        try:
            asks = await sync_to_async(app_call_needs_approval)(card, name, arguments)
        except AppRefused as exc:
            await sync_to_async(app_call_refused)(card, request.user, name, arguments, denied=False, why=exc.message)
            raise
        approved = body.get("approved")
        if asks and approved is None:
            return JsonResponse({"approval": "required", "tool": name, "arguments": arguments}, status=409)
        if asks and approved is not True:
            await sync_to_async(app_call_refused)(card, request.user, name, arguments, denied=True, why=DENIED)
            return JsonResponse({"content": [{"type": "text", "text": DENIED}], "isError": True})
        return JsonResponse(await app_call(card, request.user, name, arguments, approved=asks))
    except AppRefused as exc:
        return _refused(exc.status, exc.message)


@require_POST
async def mcp_app_read(request: HttpRequest, session_id: str, turn_id: str) -> JsonResponse:
    card = await _signed_in_card(request, session_id, turn_id, write=True)
    if isinstance(card, JsonResponse):
        return card
    try:
        uri = _body(request).get("uri")
        if not isinstance(uri, str) or not uri:
            raise AppRefused(400, '"uri" must be a resource\'s URI.')
        return JsonResponse(await app_read(card, uri))
    except AppRefused as exc:
        return _refused(exc.status, exc.message)


@require_POST
async def mcp_app_context(request: HttpRequest, session_id: str, turn_id: str) -> JsonResponse:
    card = await _signed_in_card(request, session_id, turn_id, write=True)
    if isinstance(card, JsonResponse):
        return card
    try:
        await sync_to_async(app_context_set)(card, request.user, _body(request))
    except AppRefused as exc:
        return _refused(exc.status, exc.message)
    return JsonResponse({})


@require_POST
async def mcp_app_message(request: HttpRequest, session_id: str, turn_id: str) -> JsonResponse:
    """The app's message, which the user confirmed on the card, sent as theirs: a new turn."""
    card = await _signed_in_card(request, session_id, turn_id, write=True)
    if isinstance(card, JsonResponse):
        return card
    try:
        text = _body(request).get("text")
        if not isinstance(text, str) or not text.strip():
            raise AppRefused(400, '"text" must be the message.')
        submitted = await turn_submit(partial(turn_start, session=card.session, text=text, sent_by_app=card.server))
    except AppRefused as exc:
        return _refused(exc.status, exc.message)
    except ValidationError as exc:
        return _refused(422, " ".join(exc.messages))
    await sync_to_async(app_message_sent)(card, request.user, text)
    return JsonResponse({"turn": submitted.turn.id})


@csp_exempt()
@xframe_options_exempt
@require_GET
def mcp_app_frame(request: HttpRequest) -> HttpResponse:
    """The sandbox proxy page, on the apps' origin only (aptix/apps_origin.py), under the app's CSP."""
    try:
        signed = signing.loads(request.GET.get("p", ""), salt=FRAME_SALT, max_age=FRAME_MAX_AGE)
    except signing.BadSignature:
        return HttpResponse("This frame's address is not valid (or is too old): reload the page.", status=400)
    origin = apps_origin()
    script_url = f"{origin}{static('js/mcp_app_sandbox.js')}"
    response = render(request, "agents/mcp_app_frame.html", {"host_origin": signed["host"], "script_url": script_url})
    response["Content-Security-Policy"] = frame_policy(signed["csp"], host_origin=signed["host"], script_origin=origin)
    response["Referrer-Policy"] = "no-referrer"
    response["Cache-Control"] = "no-store"
    return response
