"""A finished turn's answer as Markdown, for its session's owner: what the answer's Copy button puts
on the clipboard. Fetched when the button is clicked, so the page and the live stream carry each
answer once (as HTML), not a second time in the button."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.views.decorators.http import require_GET

from agents.selectors import turn_answer_get

from .sessions import get_session_or_404


@require_GET
@login_required
def turn_answer(request: HttpRequest, session_id: str, turn_id: str) -> HttpResponse:
    session = get_session_or_404(request, session_id, read=True)
    turn = turn_answer_get(session=session, turn_id=turn_id)
    if turn is None:
        raise Http404("No such finished turn in this session.")
    response = HttpResponse(turn.answer, content_type="text/markdown; charset=utf-8")
    response["Cache-Control"] = "private, no-store"
    return response
