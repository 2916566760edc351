"""One run of one turn: what the reasoner's steps and the tool calls share (`Run`), the calls of a
model reply (`Call`), and how the run starts (`Start`): a new turn, a turn the user decided the held
calls of, a turn a client posted its tools' results to, or a running turn whose process died while an
MCP server ran one of its calls as a task, followed by its id here."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from usage.quotas import QuotaState

from ..events import EventRecorder
from ..llm import LLMClient
from ..llm.catalog import ModelSpec
from ..models import Turn
from ..state import OpenTask, PausedState
from .context import TokenCounter


@dataclass(frozen=True)
class Call:
    """A tool call of a model reply."""

    id: str
    name: str
    arguments: str


def call_key(name: str, arguments: str) -> str:
    """A tool call's identity within a turn: the tool and its arguments as canonical JSON."""
    try:
        canonical = json.dumps(json.loads(arguments or "{}"), sort_keys=True, separators=(",", ":"))
    except ValueError:
        canonical = arguments
    return f"{name}\n{canonical}"


@dataclass(frozen=True)
class NewRun:
    """A queued turn: the run builds its request from the start."""


@dataclass(frozen=True)
class AfterDecisions:
    """A turn that awaited approval: the user decided every held call (or answered a server's question)."""


@dataclass(frozen=True)
class AfterClientTools:
    """A turn that required action: the API client posted its tools' results."""


@dataclass(frozen=True)
class FollowTask:
    """A running turn whose process died while an MCP server ran `task`: followed by its id."""

    task: OpenTask


Start = NewRun | AfterDecisions | AfterClientTools | FollowTask


def start_of(turn: Turn) -> Start:
    """How a run of `turn` starts, from its status and state."""
    if turn.status == Turn.Status.AWAITING_APPROVAL:
        return AfterDecisions()
    if turn.status == Turn.Status.REQUIRES_ACTION:
        return AfterClientTools()
    if (task := OpenTask.of(turn)) is not None:
        return FollowTask(task)
    return NewRun()  # queued, or running with no task to follow (a run handed on before it started)


@dataclass
class Run:
    """One run of one turn: what the loop's steps share."""

    turn: Turn
    recorder: EventRecorder
    llm: LLMClient  # the turn's model client (agents/llm/catalog.py decides which)
    spec: ModelSpec  # the turn's model: its models.json key and price (metering.py)
    start: Start = field(default_factory=NewRun)
    state: PausedState | None = None
    last_content: str = ""  # the last step's text (the answer if a limit stops the run)
    approval_policy: list[str] = field(default_factory=list)  # the mode's (agents/approvals.py)
    counter: TokenCounter | None = None  # the model's token counter, made on first use (context.py)
    ask_followup: bool = False  # Ask's second model call allowed (reasoner.ask_followup)
    quota: QuotaState | None = None  # the month's quota as of the last model call (metering.py); None: unlimited
    ended_while_asking: bool = False  # an MCP server's question was closed by the turn's end (asking.py)
    question_cut: str = ""  # the question its call's server cut off unanswered, closed once the call ends (asking.py)
    rest: list[Call] = field(default_factory=list)  # the reply's calls after the one running (a task's resume)
    knowledge_projects: list[str] = field(default_factory=list)  # what its knowledge search covers (loading.py)

    @property
    def agent(self) -> bool:
        return self.turn.execution == "agent"

    @property
    def model_key(self) -> str:
        """The turn's model in the catalog (the metrics' label)."""
        return self.spec.key

    @property
    def paused_state(self) -> PausedState:
        if self.state is None:
            raise RuntimeError("The run has no state before it started.")
        return self.state

    @property
    def resumes(self) -> int:
        """How many times a process took over the MCP task this run follows (0 for any other run)."""
        return self.start.task.resumes if isinstance(self.start, FollowTask) else 0
