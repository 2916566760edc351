"""The payload of every event type, typed (the registry of event types, registry.py, names them).

Producers build the TypedDict, readers (timeline, API, consumer) use the same keys; each write is
checked against it (registry.py). The shapes are those stored since the first turns: a key added
later is NotRequired, so older rows still read. Trace-only fields (the messages a step
added, the tool names) stay in the stored event and out of the live stream; what every step of a turn
shares (system prompt, tool schemas, earlier turns) is stored once, in Turn.trace (agents/run/trace.py).
"""

from __future__ import annotations

from typing import Any, NotRequired, TypedDict

from ..state import ModeChange, PendingApproval


class Usage(TypedDict):
    prompt_tokens: int
    completion_tokens: int


class StepUsage(Usage):
    turn_total: int


class TurnStarted(TypedDict):
    mode: str
    execution: str
    model: str
    max_steps: int
    system_prompt: NotRequired[str]  # trace only, in turns recorded before Turn.trace held it
    tools: NotRequired[list[dict[str, Any]]]  # likewise
    tool_kinds: dict[str, str]
    tools_allowed: NotRequired[int]  # what policy and toggles allowed (more than offered: the budget cut)
    tools_left_out: NotRequired[list[str]]
    tools_on_demand: NotRequired[list[str]]  # allowed but found through tool_search (they did not fit)
    tools_unsupported: NotRequired[bool]  # the turn's model takes no tools (models configuration)
    history: NotRequired[dict[str, Any]]  # earlier turns sent and dropped for the context budget, their tokens


class StepStarted(TypedDict):
    step: int
    max_steps: int | None
    mode: str
    messages_from: int  # where `messages` start in the request (before: Turn.trace and earlier steps)
    messages: list[dict[str, Any]]  # trace only: the messages this step added
    tools: list[str]  # trace only
    tokens: NotRequired[int]  # the request's size (context.py's count)
    history_turns: NotRequired[int]  # earlier turns in it


class ModelDelta(TypedDict):
    text: str


class DocumentUpdated(TypedDict):
    """A new version of a session's document (agents/documents), written by the agent in this turn."""

    documentId: str
    title: str
    version: int
    author: str  # "agent" (a user's edit makes a version, not an event)
    summary: NotRequired[str]


class ToolCall(TypedDict):
    id: str
    name: str
    arguments: str


class ModelMessage(TypedDict):
    step: int
    content: str
    tool_calls: list[ToolCall]
    finish_reason: str | None
    usage: StepUsage
    reasoning: NotRequired[str]  # the model's reasoning (reasoning_content, <think>), apart from content
    tools_dropped: NotRequired[bool]  # the server refused tools, so the step ran without them
    usage_estimated: NotRequired[bool]  # the server sent no usage; the counts are estimates
    truncated: NotRequired[bool]  # finish_reason "length": the answer hit the model's output limit


class ModelRetry(TypedDict):
    """The text streamed so far in this step is void: a cut-off stream is asked again (`reason`
    "cut_off"), or the text was a tool call the model wrote out, taken as the call ("text_tool_call")."""

    step: int
    reason: str


class ToolCalled(ToolCall):
    kind: str  # "internal", "mcp", "client" or "unknown"
    # "app": an MCP App shown in the turn called it (agents/mcp_apps), after the turn's run; `app_card`
    # is the model's call whose card shows that app. Absent for the run's own calls.
    by: NotRequired[str]
    app_card: NotRequired[str]


class ToolResult(TypedDict):
    id: str
    name: str
    ok: bool
    duration_ms: float
    result: NotRequired[str]  # at most APTIX_TOOL_RESULT_STORE_CHARS
    error: NotRequired[str | None]
    size: NotRequired[int]  # characters of the whole result
    cut_for_model: NotRequired[int]  # the result was cut to this many characters for the model
    repeat: NotRequired[bool]  # the same call was made earlier in the turn: its result was given again
    stopped: NotRequired[bool]  # the turn was stopped while the tool ran: it may have had its effect
    # Rich content of an MCP result (tools/mcp/rich.py Attachment.payload): images, files, links,
    # embedded resources; `text` is then the result's text blocks alone (the card shows the rest apart).
    attachments: NotRequired[list[dict[str, Any]]]
    text: NotRequired[str]
    # The tool's MCP App (tools/mcp/apps.py; tools/mcp/entry.py McpToolEntry._with_app): server, tool,
    # input, the result as sent, the app's uri, sha256 (its HTML in storage), csp, permissions and
    # prefersBorder; or uri and `error` when it cannot be shown. The card shows it (agents/web/apps.py).
    app: NotRequired[dict[str, Any]]
    by: NotRequired[str]  # "app": the result of a call an MCP App made (see ToolCalled)


class ToolProgress(TypedDict):
    """A running MCP call's latest `notifications/progress` (coalesced: at most one event per
    PROGRESS_INTERVAL of agents/run/tool_calls.py, always the newest)."""

    id: str
    name: str
    progress: float
    total: float | None
    message: str  # at most PROGRESS_MESSAGE_CHARS


class ToolTask(TypedDict):
    """A running MCP call that its server runs as a task (tools/mcp/tasks.py): each new status. The
    first one stores the task id, so a run resumed after its worker died follows the task again
    (`resumable`: its server is reached over HTTP; a stdio server dies with its worker)."""

    id: str
    name: str
    taskId: str
    status: str  # working, input_required, completed, failed, cancelled
    statusMessage: str  # at most tasks.MESSAGE_CHARS
    server: str
    resumable: bool


class Branch(TypedDict):
    mode: str
    reason: str


class TurnEnded(TypedDict):
    """The final event of a turn (turn.completed, turn.failed, turn.cancelled, limit.reached)."""

    status: str
    answer: str
    mode: str
    mode_changes: list[ModeChange]
    branch: Branch | None
    usage: NotRequired[Usage]
    steps: NotRequired[int]
    # turn.failed
    error: NotRequired[str]
    kind: NotRequired[str]
    # turn.cancelled
    reason: NotRequired[str]
    # limit.reached
    limit: NotRequired[str]
    message: NotRequired[str]
    max_steps: NotRequired[int]
    token_budget: NotRequired[int]
    used: NotRequired[int]


class ApprovalRequested(TypedDict):
    """The turn waits for the user: the calls to decide (agents/approvals.py)."""

    calls: list[PendingApproval]
    mode: str  # the session's mode when the turn paused (a mode change card says "from <mode>")


class ApprovalDecision(TypedDict):
    id: str
    name: str
    kind: str
    decision: str  # ToolApproval.Decision
    scope: str
    branch: bool | None
    decided_by: str | None
    reason: NotRequired[str]  # a question closed because its call ended first (agents/elicitations.py)


class ApprovalDecided(TypedDict):
    decisions: list[ApprovalDecision]


def branch_of(mode_changes: list[ModeChange]) -> Branch | None:
    """The new session a turn asks for: its last change with `branch`."""
    change = next((c for c in reversed(mode_changes) if c["branch"]), None)
    return {"mode": change["newMode"], "reason": change["reason"]} if change else None


def final_payload(
    extra: dict[str, Any],
    *,
    status: str,
    answer: str,
    mode: str,
    mode_changes: list[ModeChange],
    usage: Usage | None = None,
    steps: int | None = None,
) -> TurnEnded:
    """A final event's payload: what ended the turn (`extra`) and the turn's outcome."""
    payload: dict[str, Any] = {
        **extra,
        "status": status,
        "answer": answer,
        "mode": mode,
        "mode_changes": mode_changes,
        "branch": branch_of(mode_changes),
    }
    if usage is not None:
        payload["usage"] = usage
    if steps is not None:
        payload["steps"] = steps
    return payload  # type: ignore[return-value]  # TypedDict built from a dict: keys as declared above


def turn_columns(payload: TurnEnded) -> dict[str, Any] | None:
    """The turn row's columns a final event carries: what `final_payload` put in it from the turn's
    outcome (agents/turns.py `finished` writes the same values). None for a final event without
    usage and steps (a turn ended by no run, a sweep): those columns are only in the row."""
    if "usage" not in payload or "steps" not in payload:
        return None
    columns: dict[str, Any] = {
        "answer": payload.get("answer", ""),
        "error": payload.get("error") or "",
        "step_count": payload["steps"],
    }
    usage = payload["usage"]
    columns.update({key: usage[key] for key in ("prompt_tokens", "completion_tokens") if key in usage})  # type: ignore[literal-required]
    if payload.get("status"):
        columns["status"] = payload["status"]
    if payload.get("mode"):
        columns["response_mode"] = payload["mode"]
    return columns
