"""Input no database can store: a NUL character (PostgreSQL refuses it in text) or an unpaired UTF-16
surrogate (not encodable as UTF-8). Such input is refused up front, naming the field, instead of
failing as a 500 deep in a query.

`RejectUnstorableInput` checks every request's path, query string and form fields; the JSON API
checks its body with `unstorable_in` (it names the JSON path).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.http.request import RawPostDataException

ERROR_FORM_NOT_JSON = (
    "This address takes a JSON body (Content-Type: application/json), not form data (multipart/form-data)."
)
_SURROGATE = re.compile(r"[\ud800-\udfff]")


def unstorable(text: str) -> str | None:
    """What makes `text` unstorable, or None."""
    if "\x00" in text:
        return "a NUL character"
    if _SURROGATE.search(text):
        return "an unpaired surrogate character"
    return None


def unstorable_in(value: Any, where: str = "") -> tuple[str, str] | None:
    """(field path, problem) of the first unstorable string in a JSON value (keys included), or None."""
    if isinstance(value, str):
        problem = unstorable(value)
        return (where or "body", problem) if problem else None
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, item in items:
        path = f"{where}[{key}]" if isinstance(key, int) else f"{where}.{key}" if where else str(key)
        if isinstance(key, str) and (problem := unstorable(key)):
            return path, problem
        if found := unstorable_in(item, path):
            return found
    return None


class RejectUnstorableInput:
    """Middleware: a 400 naming the field for a path, query parameter or form field that cannot be stored."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        for where, text in self._texts(request):
            if problem := unstorable(text):
                return HttpResponse(f"The {where} contains {problem}.", status=400, content_type="text/plain")
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        """A multipart form sent where a JSON body is read: this middleware parsed the form's fields
        (to check them), after which Django refuses the raw body (RawPostDataException) — a 415
        saying what to send instead of a 500. Only the upload endpoints take multipart."""
        if isinstance(exception, RawPostDataException):
            return JsonResponse({"error": {"message": ERROR_FORM_NOT_JSON, "field": None}}, status=415)
        return None

    @staticmethod
    def _texts(request: HttpRequest):
        yield "address", request.path
        for name, values in request.GET.lists():
            yield from ((f"parameter {name!r}", v) for v in [name, *values])
        if request.content_type in ("application/x-www-form-urlencoded", "multipart/form-data"):
            for name, values in request.POST.lists():
                yield from ((f"field {name!r}", v) for v in [name, *values])
