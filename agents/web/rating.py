"""The rating block under a finished answer (templates/agents/_feedback.html): drawn with the turn by
the page and the live stream (timeline.py turn_context), and alone by the rating view
(views/feedback.py) after each press."""

from __future__ import annotations

from typing import Any

from django.template.loader import render_to_string

from agents.models import AnswerFeedback, Turn


def turn_feedback(turn: Turn) -> AnswerFeedback | None:
    """The turn's feedback as read with the turn (select_related("feedback"), as the page's selectors
    do); a turn read without it — the live stream's, which has just ended — has none yet."""
    if not Turn.feedback.is_cached(turn):
        return None
    return getattr(turn, "feedback", None)  # None when read and absent (a RelatedObjectDoesNotExist)


def feedback_context(turn: Turn, *, latest: bool) -> dict[str, Any]:
    """What the block needs: the rating given, and whether it can still be given or changed (the
    session's latest turn, finished with an answer; the template leaves it out for a reader)."""
    return {
        "feedback": turn_feedback(turn),
        "rateable": latest and turn.is_finished and bool(turn.answer),
        "reasons": AnswerFeedback.Reason.choices,
        "comment_max": AnswerFeedback.COMMENT_MAX_CHARS,
    }


def render_feedback(turn: Turn, *, latest: bool, asking: bool = False, saved: bool = False, error: str = "") -> str:
    """The block alone: `asking` opens the reason form (a 👎 just given), `saved` thanks, `error` says
    why a rating was refused."""
    context = {"turn": turn, **feedback_context(turn, latest=latest), "asking": asking, "saved": saved, "error": error}
    return render_to_string("agents/_feedback.html", context)
