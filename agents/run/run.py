"""One run of one turn (`Run`: what the loop's steps share) and the tool calls of a reply (`Call`)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from ..events import EventRecorder
from ..models import Turn
from ..state import PausedState


def call_key(name: str, arguments: str) -> str:
    """A tool call's identity within a turn: the tool and its arguments as canonical JSON."""
    try:
        canonical = json.dumps(json.loads(arguments or "{}"), sort_keys=True, separators=(",", ":"))
    except ValueError:
        canonical = arguments
    return f"{name}\n{canonical}"


@dataclass
class Run:
    """One run of one turn: what the loop's steps share."""

    turn: Turn
    recorder: EventRecorder
    state: PausedState | None = None
    last_content: str = ""  # the last step's text (the answer if a limit stops the run)
    approval_policy: list[str] = field(default_factory=list)  # the mode's (agents/approvals.py)
    counter: Any = None  # the model's TokenCounter (context.py)
    llm: Any = None  # the turn's model client (agents/llm/catalog.py decides which)
    ask_followup: bool = False  # Ask's second model call allowed (reasoner.ask_followup)
    model_key: str = ""  # the turn's model in the catalog (the metrics' label)
    spec: Any = None  # the turn's ModelSpec: its models.json key and price (metering.py)
    quota: Any = None  # the month's QuotaState as of the last model call (metering.py); None: unlimited
    ended_while_asking: bool = False  # an MCP server's question was closed by the turn's end (asking.py)
    rest: list[Call] = field(default_factory=list)  # the reply's calls after the one running (a task's resume)

    @property
    def agent(self) -> bool:
        return self.turn.execution == "agent"

    @property
    def paused_state(self) -> PausedState:
        if self.state is None:
            raise RuntimeError("The run has no state before it started.")
        return self.state


@dataclass(frozen=True)
class Call:
    id: str
    name: str
    arguments: str
