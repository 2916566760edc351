"""What a form's answer shows once after its redirect (Post/Redirect/Get): a new API token's secret, a
new invitation's link. The POST keeps it in the user's session and redirects; the page it redirects to
takes it out, so it is drawn on that one answer and a reload neither repeats the action nor shows the
secret again. The session is the signed-in user's own (Django's database sessions: stored server-side, the
cookie holds only its key), and the value leaves it at the next page view."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest

PREFIX = "aptix.shown_once."


def show_once(request: HttpRequest, key: str, value: Any) -> None:
    """Keep `value` (JSON-serialisable) for the next page that takes `key`."""
    request.session[PREFIX + key] = value


def take_once(request: HttpRequest, key: str) -> Any:
    """The value kept under `key`, removed from the session; None when there is none."""
    return request.session.pop(PREFIX + key, None)
