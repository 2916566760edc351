"""Sharing a session with its team, from the session menu (its author only), and a reader's
"Continue as my copy" (agents/sharing/services.py). Plain forms answered with a redirect (303) and a
message, like the menu's housekeeping (manage.py)."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.urls import reverse
from django.views.decorators.http import require_POST

from agents.sharing.services import session_copy, session_share

from .manage import ERROR_BAD_FLAG, flag_value, refused_page, see_other
from .sessions import get_session_or_404


@require_POST
@login_required
def session_share_view(request: HttpRequest, session_id: str) -> HttpResponse:
    """Share the session with its team (`shared=1`) or stop sharing it (`shared=0`): its author only
    (a reader gets a 403, anyone else a 404). Stopping closes the readers' live views at once."""
    session = get_session_or_404(request, session_id)
    shared = flag_value(request, "shared")
    if shared is None:
        return refused_page(request, session, ValidationError(ERROR_BAD_FLAG.format(field="shared")))
    session_share(session=session, user=request.user, shared=shared)
    team = session.team.name
    said = f"Shared with {team}: its members can read it." if shared else f"No longer shared with {team}."
    messages.success(request, said)
    return see_other(reverse("session-detail", args=[session.id]))


@require_POST
@login_required
def session_copy_view(request: HttpRequest, session_id: str) -> HttpResponse:
    """ "Continue as my copy": a new session of the reader's with the shared session's turns as its
    history; opens it."""
    session = get_session_or_404(request, session_id, read=True)
    copy = session_copy(session=session, user=request.user)
    messages.success(request, "Your own copy: carry on from here.")
    return see_other(reverse("session-detail", args=[copy.id]))
