"""The only writer of AnswerFeedback: `feedback_set`, for the page's buttons and the JSON API alike.

A rating belongs to the session's owner (the caller found the turn through `feedback_turn_get`, which
admits no one else), to a finished turn with an answer, and can change until the next turn: once the
session has a later turn (a new message, an edit or a retry) the rating of this one is final. What the
turn ran with (its mode and that mode's version, the model, the tools it called) is copied in, so the
report does not depend on rows or catalog entries that may change later.
"""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction

from agents.models import AgentSession, AnswerFeedback, Turn

from .selectors import turn_has_later, turn_tools_called

Rating = AnswerFeedback.Rating
Reason = AnswerFeedback.Reason

ERROR_RATING = "'rating' must be 'up' or 'down'."
ERROR_REASON = "'reason' must be one of 'wrong', 'unsafe', 'not_helpful' or 'other'."
ERROR_REASON_WITH_UP = "A reason goes with a 'down' rating only."
ERROR_COMMENT = f"'comment' must be text of at most {AnswerFeedback.COMMENT_MAX_CHARS} characters."
ERROR_NOT_ANSWERED = "This turn has no answer to rate yet."
ERROR_NOT_LATEST = "Feedback can be changed only until the next turn: this session has a later turn."
ERROR_NOT_OWNER = "Only the session's owner rates its answers."
CODE_NOT_ANSWERED = "not_answered"
CODE_NOT_LATEST = "not_latest"
CODE_NOT_OWNER = "not_owner"

# Spellings of "not helpful" a client may send; stored as the choice's value.
REASON_ALIASES = {"not-helpful": Reason.NOT_HELPFUL, "not helpful": Reason.NOT_HELPFUL}


def feedback_clean(*, rating: Any, reason: Any = "", comment: Any = "") -> tuple[str, str, str]:
    """(rating, reason, comment) checked, or a ValidationError naming the field (its message one of
    this module's constants). An absent reason or comment is "" (None counts as absent)."""
    if rating not in Rating.values:
        raise ValidationError({"rating": ValidationError(ERROR_RATING, code="invalid")})
    reason = "" if reason is None else reason
    if not isinstance(reason, str) or (reason and REASON_ALIASES.get(reason, reason) not in Reason.values):
        raise ValidationError({"reason": ValidationError(ERROR_REASON, code="invalid")})
    reason = REASON_ALIASES.get(reason, reason)
    if reason and rating == Rating.UP:
        raise ValidationError({"reason": ValidationError(ERROR_REASON_WITH_UP, code="invalid")})
    comment = "" if comment is None else comment
    if not isinstance(comment, str) or len(comment) > AnswerFeedback.COMMENT_MAX_CHARS:
        raise ValidationError({"comment": ValidationError(ERROR_COMMENT, code="invalid")})
    return rating, reason, comment.strip()


@transaction.atomic
def feedback_set(
    *, turn: Turn, user: Any, rating: Any, reason: Any = "", comment: Any = "", keep: bool = False
) -> AnswerFeedback:
    """Record `user`'s rating of `turn`'s answer (a new one, or the one they gave changed). With `keep`
    (the page's 👍/👎 buttons, which send a rating alone), a rating that does not change keeps its reason
    and comment; the API's body replaces all three. Refused (ValidationError, nothing written): bad
    values (naming the field), someone other than the owner, a turn without an answer, a turn that is no
    longer the session's latest."""
    rating, reason, comment = feedback_clean(rating=rating, reason=reason, comment=comment)
    if turn.session.user_id != user.pk:
        raise ValidationError(ERROR_NOT_OWNER, code=CODE_NOT_OWNER)
    if not (turn.is_finished and turn.answer):
        raise ValidationError(ERROR_NOT_ANSWERED, code=CODE_NOT_ANSWERED)
    # The session's row is locked, as by every turn start (agents/turns.py), so no next turn can begin
    # between this check and the write.
    AgentSession.objects.select_for_update().filter(pk=turn.session_id).first()
    if turn_has_later(turn=turn):
        raise ValidationError(ERROR_NOT_LATEST, code=CODE_NOT_LATEST)
    feedback = AnswerFeedback.objects.filter(turn=turn).first() or AnswerFeedback(turn=turn)
    if keep and feedback.pk and feedback.rating == rating and not reason and not comment:
        reason, comment = feedback.reason, feedback.comment
    feedback.user = user
    feedback.rating, feedback.reason, feedback.comment = rating, reason, comment
    feedback.mode = turn.mode
    feedback.mode_version = str((turn.trace or {}).get("mode_version") or "")
    feedback.model_label = turn.model_label
    feedback.tools = turn_tools_called(turn=turn)
    feedback.full_clean(exclude=["turn", "user"])
    feedback.save()
    return feedback
