"""The ids every structured log line of a request or a turn carries: `request_id`, `turn_id`,
`session_id` and `user_id`, where known.

They live in a context variable, set where the work starts: `RequestIds` (a middleware) for an HTTP
request, the websocket consumer for a socket, the run for a turn (agents/run). `IdsFilter`, on the
log handler (settings.LOGGING), copies them onto each record, so aptix/logging.py's JSON lines show
them; a field the call passes itself (`extra={"turn_id": …}`) wins. A task started from a request
inherits its ids (asyncio copies the context); a run starts in an empty context and binds its own.

`X-Request-ID`: a proxy's or client's id is kept when it is sane (1-128 letters, digits, `.`, `_`,
`:` or `-`), else one is made; either way the response sends it back.
"""

from __future__ import annotations

import contextvars
import logging
import re
import uuid
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from asgiref.sync import iscoroutinefunction, markcoroutinefunction
from django.http import HttpRequest, HttpResponse
from django.utils.functional import empty

HEADER = "X-Request-ID"
FIELDS = ("request_id", "turn_id", "session_id", "user_id")
SANE_ID = re.compile(r"[A-Za-z0-9._:-]{1,128}")

_ids: contextvars.ContextVar[Mapping[str, Any] | None] = contextvars.ContextVar("aptix_log_ids", default=None)


def bind(**ids: Any) -> contextvars.Token:
    """Add ids (None and "" are left out) to what this context's log lines carry."""
    given = {name: value for name, value in ids.items() if value is not None and value != ""}
    return _ids.set({**(_ids.get() or {}), **given})


def current() -> dict[str, Any]:
    """The ids this context's log lines carry now."""
    ids = dict(_ids.get() or {})
    request = ids.pop("_request", None)
    if "user_id" not in ids and request is not None:
        # Only a user the request has looked up already (request.user, or `await request.auser()` in
        # an async view): logging must not load the login session.
        user = getattr(request, "_acached_user", None) or getattr(request, "user", None)
        wrapped = getattr(user, "_wrapped", user)
        if wrapped is not empty and wrapped is not None and getattr(wrapped, "is_authenticated", False):
            ids["user_id"] = wrapped.pk
    return ids


def request_id_from(value: str | None) -> str:
    """The request id to use: `value` (a header) when it is sane, else a new one."""
    return value if value and SANE_ID.fullmatch(value) else uuid.uuid4().hex


class IdsFilter(logging.Filter):
    """Copies the context's ids onto a record (those the call set itself are kept)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if _ids.get():
            for name, value in current().items():
                if not hasattr(record, name):
                    setattr(record, name, value)
        return True


class RequestIds:
    """Middleware: the request's id (X-Request-ID, sane, else new) and, once looked up, its user's."""

    sync_capable = True
    async_capable = True

    def __init__(self, get_response: Callable[[HttpRequest], Any]) -> None:
        self.get_response = get_response
        self.is_async = iscoroutinefunction(get_response)
        if self.is_async:
            markcoroutinefunction(self)

    def _bind(self, request: HttpRequest) -> tuple[str, contextvars.Token]:
        request_id = request_id_from(request.headers.get(HEADER))
        return request_id, _ids.set({"request_id": request_id, "_request": request})

    def __call__(self, request: HttpRequest) -> HttpResponse | Awaitable[HttpResponse]:
        if self.is_async:
            return self._acall(request)
        request_id, token = self._bind(request)
        try:
            response = self.get_response(request)
        finally:
            _ids.reset(token)  # a thread serving requests one after another must not keep them
        response[HEADER] = request_id
        return response

    async def _acall(self, request: HttpRequest) -> HttpResponse:
        request_id, token = self._bind(request)
        try:
            response = await self.get_response(request)
        finally:
            _ids.reset(token)
        response[HEADER] = request_id
        return response
