"""The owner's housekeeping of a session, from the session menu: rename, pin, archive, delete. Plain
forms (they work without JavaScript): each answers with a redirect (303) and a message, or the session
page again with the reason and a 4xx. Auth and ownership first: anyone else's session is a 404."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.urls import reverse
from django.views.decorators.http import require_POST

from agents.sessions import session_archive, session_delete, session_pin, session_rename

from ..streams import access_changed
from .sessions import detail_page, get_session_or_404

if TYPE_CHECKING:
    from agents.models import AgentSession

ERROR_BAD_FLAG = "Send {field}=1 or {field}=0."


def see_other(url: str) -> HttpResponseRedirect:
    response = HttpResponseRedirect(url)
    response.status_code = 303  # after a POST: GET the page
    return response


def refused_page(
    request: HttpRequest, session: AgentSession, exc: ValidationError, *, status: int = 400
) -> HttpResponse:
    for text in exc.messages:
        messages.error(request, text)
    return detail_page(request, session, status=status)


def flag_value(request: HttpRequest, field: str) -> bool | None:
    return {"1": True, "0": False}.get(request.POST.get(field, ""))


@require_POST
@login_required
def session_rename_view(request: HttpRequest, session_id: str) -> HttpResponse:
    session = get_session_or_404(request, session_id)
    try:
        session_rename(session=session, title=request.POST.get("title", ""))
    except ValidationError as exc:
        return refused_page(request, session, exc)
    messages.success(request, "Session renamed.")
    return see_other(reverse("session-detail", args=[session.id]))


def _toggle(
    request: HttpRequest, session_id: str, field: str, apply: Callable[..., AgentSession], said: tuple[str, str]
) -> HttpResponse:
    """A yes/no setting of the session (`field` "1" or "0" in the form), applied by `apply`."""
    session = get_session_or_404(request, session_id)
    value = flag_value(request, field)
    if value is None:
        return refused_page(request, session, ValidationError(ERROR_BAD_FLAG.format(field=field)))
    apply(session=session, **{field: value})
    messages.success(request, said[0] if value else said[1])
    return see_other(reverse("session-detail", args=[session.id]))


@require_POST
@login_required
def session_pin_view(request: HttpRequest, session_id: str) -> HttpResponse:
    return _toggle(request, session_id, "pinned", session_pin, ("Pinned to the top of your sessions.", "Unpinned."))


@require_POST
@login_required
def session_archive_view(request: HttpRequest, session_id: str) -> HttpResponse:
    said = ("Archived: find it under Archived in the sidebar.", "Unarchived.")
    return _toggle(request, session_id, "archived", session_archive, said)


@require_POST
@login_required
def session_delete_view(request: HttpRequest, session_id: str) -> HttpResponse:
    session = get_session_or_404(request, session_id)
    try:
        session_delete(session=session)
    except ValidationError as exc:
        return refused_page(request, session, exc, status=409)
    access_changed(request.user.pk)  # its open streams (other tabs) close now, not at their next check
    messages.success(request, f"Deleted “{session}”.")
    return see_other(reverse("home"))
