"""What every JSON API view shares (agents/web/api.py, api_resend.py): the error that becomes a JSON
answer naming the field, the request body parsed as a JSON object, the bearer token's user, and a
service's ValidationError turned into that error."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from asgiref.sync import sync_to_async
from django.core.exceptions import ValidationError
from django.http import HttpRequest, JsonResponse

from agents.attachments import CODE_NO_FILE
from agents.selectors import turn_shared_with
from agents.sessions import ERROR_READ_ONLY, SessionNotFoundError, SessionReadOnlyError, session_get
from agents.turns import CODE_NOTHING_TO_CONTINUE, CODE_SESSION_DELETED, CODE_TURN_RUNNING, error_code
from aptix.bearer import NotForHere, RateLimited, bearer_user
from aptix.inputs import unstorable_in
from aptix.models import ApiToken
from aptix.ratelimits import Limited
from usage.quotas import CODE_QUOTA

if TYPE_CHECKING:
    from agents.models import AgentSession

# Service error codes (ValidationError.code) that are not a plain 400.
STATUS_OF_CODE = {
    CODE_TURN_RUNNING: 409,
    CODE_NOTHING_TO_CONTINUE: 409,
    CODE_SESSION_DELETED: 404,
    CODE_QUOTA: 429,  # the month's usage quota is used up (usage/quotas.py)
    CODE_NO_FILE: 404,  # a file of another user or session: as if there were none
}


class ApiError(Exception):
    def __init__(self, status: int, message: str, field: str | None = None, *, retry_after: int | None = None) -> None:
        super().__init__(message)
        self.status, self.message, self.field, self.retry_after = status, message, field, retry_after

    @classmethod
    def too_many(cls, limited: Limited) -> ApiError:
        return cls(429, limited.message, retry_after=limited.retry_after)

    @classmethod
    def refused(
        cls,
        exc: ValidationError,
        *,
        statuses: Mapping[str, int] = STATUS_OF_CODE,
        fields: Mapping[str, str] | None = None,
        default_field: str | None = None,
    ) -> ApiError:
        """A service's ValidationError: its messages, the field it names (renamed by `fields` to the
        API's name) and the status its code maps to (400 otherwise)."""
        field_name = next(iter(getattr(exc, "message_dict", {}) or {}), default_field)
        field_name = (fields or {}).get(field_name or "", field_name)
        return cls(statuses.get(error_code(exc) or "", 400), " ".join(exc.messages), field_name)

    def response(self) -> JsonResponse:
        response = JsonResponse({"error": {"message": self.message, "field": self.field}}, status=self.status)
        if self.retry_after is not None:
            response["Retry-After"] = str(self.retry_after)
        return response


def json_body(raw: bytes) -> dict[str, Any]:
    """The request body as a JSON object whose every string can be stored, or an ApiError naming why not."""
    try:
        body = json.loads(raw or b"")
    except (ValueError, UnicodeDecodeError):
        raise ApiError(400, "The request body must be a JSON object.", None) from None
    except RecursionError:
        raise ApiError(400, "The request body is nested too deeply.", None) from None
    if not isinstance(body, dict):
        raise ApiError(400, "The request body must be a JSON object.", None)
    if bad := unstorable_in(body):
        raise ApiError(400, f"'{bad[0]}' contains {bad[1]}.", bad[0])
    return body


def conversation_get(*, user: Any, conversation_id: str, read: bool = False) -> AgentSession:
    """The conversation the user may use: their own; with `read`, also one a teammate shared with
    their team. A shared one asked for anything else is a 403 saying why; any other id a 404."""
    try:
        return session_get(user=user, session_id=conversation_id, read=read)
    except SessionNotFoundError:
        raise ApiError(404, "No conversation with this id.", "conversationId") from None
    except SessionReadOnlyError as exc:
        raise ApiError(403, str(exc.args[0]), "conversationId") from None


def no_turn(*, user: Any, turn_id: str) -> ApiError:
    """The answer for a turn id that is not the user's: 403 saying why when it is of a session shared
    with them to read, else a 404."""
    if turn_shared_with(user=user, turn_id=turn_id):
        return ApiError(403, ERROR_READ_ONLY, "turnId")
    return ApiError(404, "No turn with this id.", "turnId")


async def authenticate(request: HttpRequest, interface: str = ApiToken.Interface.API) -> Any:
    """The token's user, within the rate limits (aptix/bearer.py): 429 past them, 401 without a valid
    token, 403 for a token limited to other interfaces than `interface`."""
    try:
        user = await sync_to_async(bearer_user)(request, interface)
    except RateLimited as exc:
        raise ApiError.too_many(exc.limited) from None
    except NotForHere as exc:
        raise ApiError(403, str(exc)) from None
    if user is None:
        raise ApiError(401, "Missing or invalid bearer token. Send 'Authorization: Bearer <token>'.")
    return user
