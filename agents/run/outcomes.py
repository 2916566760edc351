"""What a step of the loop, and then the whole run, ends with — typed, instead of a status
mutated on the turn. `Reasoner._end` maps each ending to the turn's end status and final event."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from ..models import Turn
from ..turns import STOPPED_BY_USER

Status = Turn.Status


@dataclass(frozen=True)
class RunAgain:
    """Tool results went back into the conversation: call the model again."""


@dataclass(frozen=True)
class PausedForClientTools:
    """The model called tools the API client runs: the turn waits for their results."""


@dataclass(frozen=True)
class PausedForApproval:
    """Tool calls wait for the user's approval (agents/approvals.py): the turn waits for decisions."""


@dataclass(frozen=True)
class Ending:
    """A way a run ends: its status, its final event, and what goes in that event."""

    status: ClassVar[str]
    event_type: ClassVar[str]
    answer: str = ""

    @property
    def error(self) -> str:
        return ""

    def extra(self) -> dict[str, Any]:
        return {}


@dataclass(frozen=True)
class FinalAnswer(Ending):
    status = Status.COMPLETED
    event_type = "turn.completed"


@dataclass(frozen=True)
class LimitReached(Ending):
    status = Status.LIMIT_REACHED
    event_type = "limit.reached"
    limit: dict[str, Any] = field(default_factory=dict)

    def extra(self) -> dict[str, Any]:
        return dict(self.limit)


@dataclass(frozen=True)
class Stopped(Ending):
    """Cancelled by the user; what was streamed before the stop stays as the (partial) answer."""

    status = Status.CANCELLED
    event_type = "turn.cancelled"
    reason: str = STOPPED_BY_USER

    def extra(self) -> dict[str, Any]:
        return {"reason": self.reason}


@dataclass(frozen=True)
class Failed(Ending):
    status = Status.FAILED
    event_type = "turn.failed"
    message: str = ""
    kind: str = "internal"

    @property
    def error(self) -> str:
        return self.message

    def extra(self) -> dict[str, Any]:
        return {"error": self.message, "kind": self.kind}


StepOutcome = RunAgain | PausedForClientTools | PausedForApproval | FinalAnswer | LimitReached
RunOutcome = PausedForClientTools | PausedForApproval | FinalAnswer | LimitReached | Stopped | Failed
