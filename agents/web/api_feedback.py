"""JSON API: feedback on an answer (agents/feedback/services.py feedback_set, as the page's buttons).

`POST /api/v1/turns/<turnId>/feedback` with `{"rating": "up"|"down", "reason":
"wrong"|"unsafe"|"not_helpful"|"other"|null, "comment": str|null}` records the user's rating of the
turn's answer, or replaces the one they gave (the body replaces all three values): `reason` goes with
`down` only; `comment` is at most 2000 characters. `GET` reads it back. The answer is the rating with
what the turn ran with: `{"turnId", "rating", "reason", "comment", "mode", "modeVersion", "model",
"tools", "createdAt", "updatedAt"}`.

Bearer token first; only the conversation's owner rates: a turn of a conversation a teammate shared
with the user's team is a 403 saying it is read-only (as every write asked of a reader), any other
turn that is not theirs a 404; a bad value is a 400 naming the field, with
nothing written; a turn without an answer, or no longer the conversation's latest (feedback can be
changed until the next turn), is a 409 saying so.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from asgiref.sync import sync_to_async
from django.core.exceptions import ValidationError
from django.http import HttpRequest, JsonResponse
from django.views.decorators.csrf import csrf_exempt

from agents.feedback.selectors import feedback_turn_get
from agents.feedback.services import CODE_NOT_ANSWERED, CODE_NOT_LATEST, CODE_NOT_OWNER, feedback_set
from agents.web.rating import turn_feedback

from .api_support import ApiError, authenticate, json_body, no_turn

if TYPE_CHECKING:
    from agents.models import AnswerFeedback, Turn

FEEDBACK_FIELDS = frozenset({"rating", "reason", "comment"})
STATUS_OF_FEEDBACK_CODE = {CODE_NOT_ANSWERED: 409, CODE_NOT_LATEST: 409, CODE_NOT_OWNER: 404}
ERROR_NO_FEEDBACK = "This turn has no feedback yet."


def version_number(stored: str) -> int | str | None:
    """The mode's version as stored with the feedback: a number (a fingerprint before versions)."""
    return int(stored) if stored.isdigit() else stored or None


def feedback_json(feedback: AnswerFeedback) -> dict[str, Any]:
    return {
        "turnId": feedback.turn_id,
        "rating": feedback.rating,
        "reason": feedback.reason or None,
        "comment": feedback.comment,
        "mode": feedback.mode,
        "modeVersion": version_number(feedback.mode_version),
        "model": feedback.model_label,
        "tools": feedback.tools,
        "createdAt": feedback.created_at.isoformat(),
        "updatedAt": feedback.updated_at.isoformat(),
    }


def parse_feedback_request(raw: bytes) -> dict[str, Any]:
    """The body's fields, or an ApiError naming an unknown one (their values are the service's to check)."""
    body = json_body(raw)
    if unknown := sorted(set(body) - FEEDBACK_FIELDS):
        raise ApiError(400, f"Unknown field '{unknown[0]}'; expected 'rating', 'reason' and 'comment'.", unknown[0])
    return body


def _turn(user: Any, turn_id: str) -> Turn:
    turn = feedback_turn_get(user=user, turn_id=turn_id)
    if turn is None:  # a teammate's shared conversation: 403 saying why; anything else 404
        raise no_turn(user=user, turn_id=turn_id)
    return turn


def _record(user: Any, turn_id: str, raw: bytes) -> dict[str, Any]:
    turn = _turn(user, turn_id)  # someone else's turn is a 404 whatever the body
    body = parse_feedback_request(raw)
    values = (body.get("rating"), body.get("reason"), body.get("comment"))
    try:
        return feedback_json(feedback_set(turn=turn, user=user, rating=values[0], reason=values[1], comment=values[2]))
    except ValidationError as exc:
        raise ApiError.refused(exc, statuses=STATUS_OF_FEEDBACK_CODE, default_field="turnId") from None


def _read(user: Any, turn_id: str) -> dict[str, Any]:
    feedback = turn_feedback(_turn(user, turn_id))
    if feedback is None:
        raise ApiError(404, ERROR_NO_FEEDBACK, "turnId")
    return feedback_json(feedback)


@csrf_exempt
async def turn_feedback_api(request: HttpRequest, turn_id: str) -> JsonResponse:
    try:
        user = await authenticate(request)  # auth before anything else
        if request.method == "GET":
            return JsonResponse(await sync_to_async(_read)(user, turn_id))
        if request.method != "POST":
            raise ApiError(405, "Use POST (or GET to read the feedback).")
        answer = await sync_to_async(_record)(user, turn_id, request.body)
    except ApiError as exc:
        return exc.response()
    return JsonResponse(answer)
