"""Feedback on an answer from the page: the 👍/👎 buttons under a finished answer and, after a 👎,
the reason and comment form (agents/feedback/services.py feedback_set does the checks and the write).
Answers with the feedback block redrawn (hx-target on the block); a refusal is that block with the
reason, 422 (htmx swaps it). Only the session's owner rates: a teammate reading a shared session gets
the 403 of every write asked of a reader, anyone else a 404."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import Http404, HttpRequest, HttpResponse
from django.views.decorators.http import require_POST

from agents.feedback.selectors import feedback_turn_get
from agents.feedback.services import CODE_NOT_LATEST, feedback_set
from agents.turns import error_code

from ..rating import render_feedback
from .sessions import get_session_or_404


@require_POST
@login_required
def turn_feedback(request: HttpRequest, session_id: str, turn_id: str) -> HttpResponse:
    get_session_or_404(request, session_id)  # a teammate reading a shared session: 403, saying why
    turn = feedback_turn_get(user=request.user, turn_id=turn_id, session_id=session_id)
    if turn is None:
        raise Http404("No such turn.")
    post = request.POST
    detail = post.get("detail") == "1"  # the reason form, not a button
    values = {"rating": post.get("rating"), "reason": post.get("reason", ""), "comment": post.get("comment", "")}
    try:
        turn.feedback = feedback_set(turn=turn, user=request.user, keep=not detail, **values)
    except ValidationError as exc:  # no longer the latest turn: the buttons go, the reason stays
        latest = error_code(exc) != CODE_NOT_LATEST
        html = render_feedback(turn, latest=latest, asking=detail, error=" ".join(exc.messages))
        return HttpResponse(html, status=422)
    asking = turn.feedback.rating == "down" and not detail  # a 👎 just given: ask why
    return HttpResponse(render_feedback(turn, latest=True, asking=asking, saved=not asking))
