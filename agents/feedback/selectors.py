"""The reads of feedback on answers: the turn a user may rate, what a turn ran with (the tools it
called, whether a later turn followed), and the curators' report and the auditors' export."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db.models import Count, Max, Min, Q, QuerySet

from agents.models import AnswerFeedback, Turn
from agents.sessions import session_list

LATEST_COMMENTS = 20  # the report's "latest comments": this many, newest first


def feedback_turn_get(*, user: Any, turn_id: str, session_id: str | None = None) -> Turn | None:
    """The turn `turn_id` of one of the user's *own* sessions (session_list: a teammate's shared session
    is not theirs to rate), with its session and its feedback; None for any other id."""
    turns = Turn.objects.filter(pk=turn_id, session__in=session_list(user=user).values("pk"))
    if session_id is not None:
        turns = turns.filter(session_id=session_id)
    return turns.select_related("session", "feedback").first()


def turn_has_later(*, turn: Turn) -> bool:
    """Whether the session has a turn after this one (its feedback is then final)."""
    return Turn.objects.filter(session_id=turn.session_id, index__gt=turn.index).exists()


def turn_tools_called(*, turn: Turn) -> list[str]:
    """The names of the tools the turn called (its tool.called events), in order, each once."""
    names = turn.events.filter(type="tool.called").order_by("seq").values_list("payload__name", flat=True)
    return list(dict.fromkeys(str(n) for n in names if n))


@dataclass(frozen=True)
class FeedbackGroup:
    """The ratings of one mode (version "" when grouped by mode) in the report."""

    mode: str
    version: str
    ratings: int
    down: int
    first: datetime | None = None
    last: datetime | None = None

    @property
    def down_share(self) -> float:
        """The share of 👎 among the ratings, 0–1."""
        return self.down / self.ratings if self.ratings else 0.0


def _filtered(mode: str) -> QuerySet[AnswerFeedback]:
    rows = AnswerFeedback.objects.all()
    return rows.filter(mode=mode) if mode else rows


def feedback_by_mode(*, mode: str = "") -> list[FeedbackGroup]:
    """Per mode: the number of ratings and of 👎, worst share first (then the most rated)."""
    rows = _filtered(mode).values("mode").annotate(ratings=Count("pk"), down=Count("pk", filter=Q(rating="down")))
    groups = [FeedbackGroup(mode=r["mode"], version="", ratings=r["ratings"], down=r["down"]) for r in rows]
    return sorted(groups, key=lambda g: (-g.down_share, -g.ratings, g.mode))


def feedback_by_mode_version(*, mode: str = "") -> list[FeedbackGroup]:
    """Per mode and mode version: the ratings, the 👎, and when the version's first and last ratings
    were given (a fingerprint has no order of its own: the dates give it one), newest version first."""
    rows = (
        _filtered(mode)
        .values("mode", "mode_version")
        .annotate(
            ratings=Count("pk"),
            down=Count("pk", filter=Q(rating="down")),
            first=Min("created_at"),
            last=Max("updated_at"),
        )
        .order_by("mode", "-last")
    )
    return [
        FeedbackGroup(r["mode"], r["mode_version"], r["ratings"], r["down"], first=r["first"], last=r["last"])
        for r in rows
    ]


def feedback_latest_comments(*, mode: str = "", limit: int = LATEST_COMMENTS) -> list[AnswerFeedback]:
    """The latest ratings that carry a comment or a reason, newest first, each with its turn's id."""
    rows = _filtered(mode).filter(~Q(comment="") | ~Q(reason=""))
    return list(rows.order_by("-updated_at")[:limit])


def feedback_modes() -> list[str]:
    """The modes that have ratings (the report's filter)."""
    return list(AnswerFeedback.objects.order_by("mode").values_list("mode", flat=True).distinct())


def feedback_export(*, mode: str = "") -> QuerySet[AnswerFeedback]:
    """Every rating for the auditors' CSV, oldest first, with its turn, session, team and user."""
    related = ("user", "turn__session__team")
    return _filtered(mode).select_related(*related).order_by("updated_at", "pk")


def feedback_exists(*, turn_id: str) -> bool:
    """Whether the turn was rated (a curator may then read its trace, from the report's link)."""
    return AnswerFeedback.objects.filter(turn_id=turn_id).exists()
