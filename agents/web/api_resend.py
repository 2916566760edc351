"""JSON API: `POST /api/v1/turns/<turnId>/resend` — a turn's message sent again, as the workspace's
Edit, Retry and Regenerate buttons do (agents/conversations.py turn_resend).

Body: `{"kind": "edit"|"retry"|"regenerate", "message": str}` (`message` only for `edit`). The new
turn runs in the conversation's persisted mode and execution (AGN-011) and the response is the one
of `/agent/execute` for it, sent when it ends. The turns it replaces stay for the audit and leave the
conversation the model sees. Bearer token first; another user's turn is 404; a turn still running
is 409; bad input is a 400 naming the field, with nothing written.
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING, Any

from asgiref.sync import sync_to_async
from django.core.exceptions import ValidationError
from django.http import HttpRequest, JsonResponse
from django.views.decorators.csrf import csrf_exempt

from agents.conversations import CODE_NOT_LAST, turn_resend
from agents.runner import get_runner
from agents.selectors import turn_of_user_get
from agents.submit import turn_submit
from aptix.ratelimits import TURNS, rate_limit, user_key

from .api import execute_response
from .api_support import STATUS_OF_CODE, ApiError, authenticate, json_body, no_turn

if TYPE_CHECKING:
    from agents.models import Turn

RESEND_FIELDS = frozenset({"kind", "message"})
STATUS_OF_RESEND_CODE = {**STATUS_OF_CODE, CODE_NOT_LAST: 409}


def parse_resend_request(raw: bytes) -> tuple[str, str]:
    """(kind, message) from the body, or an ApiError naming the field."""
    body = json_body(raw)
    if unknown := sorted(set(body) - RESEND_FIELDS):
        raise ApiError(400, f"Unknown field '{unknown[0]}'; expected 'kind' and, for an edit, 'message'.", unknown[0])
    kind, message = body.get("kind"), body.get("message", "")
    if not isinstance(kind, str):
        raise ApiError(400, "'kind' must be 'edit', 'retry' or 'regenerate'.", "kind")
    if not isinstance(message, str):
        raise ApiError(400, "'message' must be a string.", "message")
    if kind != "edit" and message:
        raise ApiError(400, "Only an edit carries a 'message'; a retry or regenerate sends the turn's own.", "message")
    return kind, message


def _resend(*, user: Any, turn_id: str, kind: str, message: str) -> Turn:
    turn = turn_of_user_get(user=user, turn_id=turn_id)
    if turn is None:
        raise no_turn(user=user, turn_id=turn_id)
    try:
        return turn_resend(session=turn.session, turn_id=turn.pk, kind=kind, text=message)
    except ValidationError as exc:
        raise ApiError.refused(exc, statuses=STATUS_OF_RESEND_CODE, fields={"turn": "turnId"}) from None


@csrf_exempt
async def turn_resend_api(request: HttpRequest, turn_id: str) -> JsonResponse:
    try:
        user = await authenticate(request)  # auth before anything else
        if request.method != "POST":
            raise ApiError(405, "Use POST.")
        kind, message = parse_resend_request(request.body)
        if limited := await sync_to_async(rate_limit)(TURNS, user_key(user), request):
            raise ApiError.too_many(limited)
        submitted = await turn_submit(partial(_resend, user=user, turn_id=turn_id, kind=kind, message=message))
        turn = await get_runner().wait(submitted.turn.id, submitted.started, session_id=submitted.turn.session_id)
    except ApiError as exc:
        return exc.response()
    return JsonResponse(execute_response(turn))
