"""`Turn.state`: one documented shape per status, round-tripped through JSON.

- `queued`, `running`: empty (`{}`) — the run holds what it needs in memory; except while an MCP
  server runs one of its calls as a task: a `PausedState` plus `task` (the call, the task's id and
  server, the reply's calls after it), so another process can follow the task if this one dies
  (agents/run/tool_calls.py `resume_task`, agents/run/claims.py `run_resume_tasks`).
- `requires_action`: a `PausedState`: the conversation so far, the tools offered, the pending
  client tool calls; the turn continues exactly where it stopped when the client posts results.
- `awaiting_approval`: a `PausedState` whose `awaiting` lists the calls waiting for the user's
  decision (agents/approvals.py); the run continues from there once every one is decided.
- an ended status: an `EndedState`: the mode changes the turn made (the API's `modeChanges`).

`turn_state(turn)` reads whichever shape the turn's status says it holds.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from typing import Any, NotRequired, TypedDict

from .models import Turn


class ModeChange(TypedDict):
    """A mode change made by `agent_change_mode` in a turn (keys as the API shows them)."""

    previousMode: str | None
    newMode: str
    reason: str
    branch: bool


class PendingCall(TypedDict):
    id: str
    name: str
    arguments: str


class PendingApproval(TypedDict):
    """A tool call waiting for the user's approval, or (kind "elicitation") a running MCP tool call
    whose server asks the user something (the card shows these fields)."""

    id: str
    name: str
    arguments: str
    kind: str  # ToolApproval.Kind: "mode_change", "tool", "connect" or "elicitation"
    server: str  # the MCP server, "" for an internal tool
    annotations: dict[str, Any]
    reason: str  # a mode change's reason
    message: NotRequired[str]  # an elicitation: what the server asks
    mode: NotRequired[str]  # an elicitation: "form", "url" or "sampling"
    schema: NotRequired[dict[str, Any]]  # a form's requested schema
    url: NotRequired[str]  # URL mode: the page the user opens
    sampling: NotRequired[dict[str, Any]]  # sampling mode: the server's messages, system prompt, maxTokens


class ToolOutput(TypedDict):
    name: str
    ok: bool
    content: str


@dataclass
class PausedState:
    """What the loop carries between steps and, for client tools, between HTTP requests."""

    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]]
    kinds: dict[str, str]
    mode: str
    mode_changes: list[ModeChange] = field(default_factory=list)
    pending: list[PendingCall] = field(default_factory=list)
    awaiting: list[PendingApproval] = field(default_factory=list)
    tool_outputs: list[ToolOutput] = field(default_factory=list)  # this step's results, for Ask answers
    traced: int = 0  # how many messages the trace (step.started events) already holds
    history_sizes: list[int] = field(default_factory=list)  # earlier turns' message counts (context.py)
    seen_calls: dict[str, str] = field(default_factory=dict)  # call_key → the result the model got
    repeats: int = 0  # consecutive replies that only repeated earlier calls
    nudged: bool = False  # an empty reply was answered with one nudge
    on_demand: list[str] = field(default_factory=list)  # allowed tools tool_search finds (pipeline.plan_offer)
    citations: list[list[str]] = field(default_factory=list)  # [label, link] of the passages results quoted

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> PausedState:
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in names})


@dataclass(frozen=True)
class OpenTask:
    """A running turn's tool call that an MCP server runs as a task, kept in the turn's state beside
    its `PausedState` (key "task") from the task's first status until the call has its result: what
    a run resumed in another process needs to follow the task by its id instead of calling again."""

    call: PendingCall
    kind: str | None  # the call's kind in the turn ("mcp")
    task_id: str
    server: str
    resumable: bool  # False for a stdio server: its task ends with the process that started it
    session: str = ""  # the MCP session the task was created in (a server may know it there only)
    resumes: int = 0  # how many times a process took the task over (claims.py MAX_TASK_RESUMES)
    rest: list[PendingCall] = field(default_factory=list)  # the reply's calls after this one

    def to_json(self) -> dict[str, Any]:
        data = {
            "call": dict(self.call),
            "kind": self.kind,
            "taskId": self.task_id,
            "server": self.server,
            "resumable": self.resumable,
            "resumes": self.resumes,
            "rest": [dict(c) for c in self.rest],
        }
        return {**data, "session": self.session} if self.session else data  # none for stdio servers

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> OpenTask:
        call = data.get("call") or {}
        return cls(
            call=PendingCall(
                id=str(call.get("id", "")), name=str(call.get("name", "")), arguments=str(call.get("arguments", ""))
            ),
            kind=data.get("kind"),
            task_id=str(data.get("taskId", "")),
            server=str(data.get("server", "")),
            resumable=bool(data.get("resumable")),
            session=str(data.get("session", "")),
            resumes=int(data.get("resumes", 0)),
            rest=[PendingCall(id=c["id"], name=c["name"], arguments=c["arguments"]) for c in data.get("rest") or []],
        )

    @classmethod
    def of(cls, turn: Turn) -> OpenTask | None:
        """The task a running turn's call waits for, if any."""
        task = (turn.state or {}).get("task") if turn.status == Turn.Status.RUNNING else None
        return cls.from_json(task) if isinstance(task, dict) else None


@dataclass
class EndedState:
    mode_changes: list[ModeChange] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"mode_changes": list(self.mode_changes)}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> EndedState:
        return cls(mode_changes=list(data.get("mode_changes", [])))

    @property
    def branch(self) -> ModeChange | None:
        """The last change that asked for a new session, if any."""
        return next((c for c in reversed(self.mode_changes) if c.get("branch")), None)


def turn_state(turn: Turn) -> PausedState | EndedState | None:
    """The state the turn's status says it holds (None while queued or running)."""
    if turn.status in (Turn.Status.REQUIRES_ACTION, Turn.Status.AWAITING_APPROVAL):
        return PausedState.from_json(turn.state or {})
    if turn.is_finished:
        return EndedState.from_json(turn.state or {})
    return None
