"""The header's bell on every page: the signed-in user's open inbox count (automations/inbox.py
`inbox_count`), read only when a template draws it."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest
from django.utils.functional import SimpleLazyObject

from .inbox import inbox_count


def inbox_bell(request: HttpRequest) -> dict[str, Any]:
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return {}
    return {"inbox_count": SimpleLazyObject(lambda: inbox_count(user_id=user.pk))}
