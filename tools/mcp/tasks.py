"""MCP tasks: a tool call the server runs as a task (call now, fetch the result later) is polled here
until it ends, its status reported to whoever made the call, cancelled with `tasks/cancel` when the
call is stopped, and followed again by its id after the caller's process died (HTTP servers only).

Two generations of the protocol, as the SDK carries them:
- 2025-11-25 (tasks in the core protocol; the reference `everything` server): a server that
  declares `capabilities.tasks.requests.tools.call` runs a tool whose `execution.taskSupport` is
  "required" as a task when the call carries `task: {ttl}`; the answer is a `CreateTaskResult`, then
  `tasks/get` until the status is terminal (or `input_required`), then `tasks/result` for the tool's
  result (a server asks the user over the ordinary elicitation request while that call waits). The
  SDK types these methods but does not send them, and its `tools/call` refuses a `CreateTaskResult`,
  so the task-augmented call goes out through the session's dispatcher (`_call_legacy`).
  "optional" tools are called plainly: a quick answer without polling, as before.
- 2026-07-28 (the `io.modelcontextprotocol/tasks` extension): Aptix declares the extension, so the
  server may answer any call with `resultType: "task"`; the SDK hands that shape to the extension's
  result claim (`TasksExtension`), which follows the task here: `tasks/get` until terminal (the
  result is inline), an `input_required` task's `inputRequests` answered through the same
  elicitation callback and sent back with `tasks/update`.

Aptix does not declare the core `tasks` client capability: that one says the client *runs* tasks a
server asks of it (sampling, elicitation as tasks), which it does not.

Who is told: the caller passes a `TaskWatch` in the call's CallContext (tools/base.py; a turn's run:
the tool card's status, the task id stored for a resume), which goes down with the call to its
connection. A watch with `resume` set follows that task instead of calling the tool again.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import math
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Literal

import anyio
import mcp_types as types
from mcp import MCPError
from mcp.client.extension import ClaimContext, ClientExtension, ResultClaim
from mcp.client.session import ClientRequestContext, ClientSession
from pydantic import BaseModel, ConfigDict, TypeAdapter

TASKS_EXTENSION = "io.modelcontextprotocol/tasks"
TERMINAL = frozenset({"completed", "failed", "cancelled"})
TASK_TTL_MS = 60 * 60 * 1000  # asked for on a 2025-11-25 call: the server keeps the task this long
DEFAULT_POLL = 1.0  # seconds between polls when the server suggests none
MIN_POLL, MAX_POLL = 0.05, 60.0  # a server's suggestion is honoured within these bounds
CANCEL_WAIT = 5.0  # seconds a `tasks/cancel` may take once the call was stopped
MESSAGE_CHARS = 200

_INPUT_REQUEST: TypeAdapter[types.InputRequest] = TypeAdapter(types.InputRequest)


@dataclass(frozen=True)
class TaskState:
    """What a poll says of a task: its id, status (working, input_required, completed, failed,
    cancelled), the server's status message and the poll interval it suggests (seconds); `session`:
    the MCP session (HTTP `Mcp-Session-Id`) it was created in, which a server may scope it to."""

    task_id: str
    status: str
    message: str = ""
    poll: float = DEFAULT_POLL
    session: str = ""


@dataclass(frozen=True)
class TaskWatch:
    """The caller's side of its call's task: `on_status` gets each new state (on the host loop: the
    caller hands it on to its own loop); `resume`: follow this task instead of calling the tool, in
    `resume_session` (the session it was created in, when known: a server may know the task there only)."""

    on_status: Callable[[TaskState], None]
    resume: str = ""
    resume_session: str = ""


# A task request on some session: (method, task id, timeout, params) -> the answer as a dict.
TaskRequest = Callable[..., Awaitable[dict[str, Any]]]


# Follows a task to its result (the connection's, for the call being made).
Follow = Callable[[TaskState], Awaitable[types.CallToolResult]]


def modern(version: str | None) -> bool:
    return bool(version) and str(version) >= "2026-07-28"


def server_runs_tasks(capabilities: types.ServerCapabilities | None, version: str | None) -> bool:
    """Whether the server may run a tool call as a task on this session."""
    if capabilities is None:
        return False
    if modern(version):
        return TASKS_EXTENSION in (capabilities.extensions or {})
    requests = capabilities.tasks.requests if capabilities.tasks else None
    return bool(requests and requests.tools and requests.tools.call is not None)


def requires_task(tool: types.Tool | dict[str, Any] | None) -> bool:
    """Whether the tool runs only as a task (`execution.taskSupport: "required"`)."""
    if isinstance(tool, dict):
        execution = tool.get("execution")
        return isinstance(execution, dict) and execution.get("taskSupport") == "required"
    execution = getattr(tool, "execution", None)
    return getattr(execution, "task_support", None) == "required"


def state_of(data: dict[str, Any]) -> TaskState:
    """A task as either generation sends it (`pollInterval` / `pollIntervalMs`, milliseconds)."""
    poll_ms = data.get("pollIntervalMs", data.get("pollInterval"))
    poll = poll_ms / 1000 if isinstance(poll_ms, int | float) and math.isfinite(poll_ms) else DEFAULT_POLL
    message = data.get("statusMessage")
    return TaskState(
        task_id=str(data.get("taskId") or ""),
        status=str(data.get("status") or "working"),
        message=message.strip()[:MESSAGE_CHARS] if isinstance(message, str) else "",
        poll=min(max(poll, MIN_POLL), MAX_POLL),
    )


# --- the 2026-07-28 extension --------------------------------------------------------------------


class ModernTask(types.Result):
    """A `CreateTaskResult` of the tasks extension (the task's fields beside `resultType: "task"`)."""

    result_type: Literal["task"] = "task"
    task_id: str
    status: str = "working"
    status_message: str | None = None
    poll_interval_ms: int | None = None


class TasksExtension(ClientExtension):
    """Declares the tasks extension (2026-07-28 sessions only: the SDK drops a claim-bearing
    extension from a handshake-era capability ad) and follows the tasks a server answers with, with
    `follow_of_call()`: the connection's way of following a task of the call being made (None
    outside a call)."""

    identifier = TASKS_EXTENSION

    def __init__(self, follow_of_call: Callable[[], Follow | None]) -> None:
        super().__init__()
        self._follow_of_call = follow_of_call

    def claims(self) -> list[ResultClaim[Any]]:
        return [ResultClaim(result_type="task", model=ModernTask, resolve=self._resolve)]

    async def _resolve(self, result: ModernTask, ctx: ClaimContext) -> types.CallToolResult:
        follow = self._follow_of_call()
        if follow is None:  # a call made outside Connection.call_tool: nothing to follow it with
            raise RuntimeError(f'The MCP server answered "{ctx.tool_name}" with a task outside a tool call')
        data = result.model_dump(by_alias=True, mode="json", exclude_none=True)
        return await follow(state_of(data))


# --- requests --------------------------------------------------------------------------------------


class _Raw(BaseModel):
    """Any answer, kept as sent (the task methods' answers are read as dicts here)."""

    model_config = ConfigDict(extra="allow")


class _TaskParams(types.RequestParams):
    task_id: str
    input_responses: dict[str, Any] | None = None


class _TaskRequest(types.Request[_TaskParams, str]):
    name_param = "taskId"  # the `Mcp-Name` header the extension asks for on HTTP


async def task_request(
    session: ClientSession, method: str, task_id: str, timeout: float | None, **params: Any
) -> dict[str, Any]:
    """`tasks/get`, `tasks/result`, `tasks/cancel` or `tasks/update`, answered as a raw dict."""
    request = _TaskRequest(method=method, params=_TaskParams(task_id=task_id, **params))
    answer = await session.send_request(request, _Raw, request_read_timeout_seconds=timeout)
    return answer.model_dump()


async def call_legacy(
    session: ClientSession, tool: str, arguments: dict[str, Any], timeout: float, on_progress: Any = None
) -> dict[str, Any]:
    """A 2025-11-25 task-augmented `tools/call`, answered as a raw dict (a `CreateTaskResult`, or a
    plain result from a server that ran it at once). Through the session's own dispatcher, with the
    session's own stamp: its `send_request` would refuse the `CreateTaskResult` (mcp 2.3)."""
    data: dict[str, Any] = {
        "method": "tools/call",
        "params": {"name": tool, "arguments": arguments, "task": {"ttl": TASK_TTL_MS}},
    }
    opts: dict[str, Any] = {"timeout": timeout}
    if on_progress is not None:
        opts["on_progress"] = on_progress
    session._stamp(data, opts)  # type: ignore[arg-type]  # the protocol-version header, as send_request
    return await session._dispatcher.send_raw_request("tools/call", data["params"], opts)  # type: ignore[arg-type]


class TaskFollower:
    """Polls one task of one session until it ends; `timeout` bounds each request (not the task).
    `session_id`: the MCP session the task lives in, told with each state; `request`: how its task
    requests are sent (default: on `session`; a resumed task may live in another session)."""

    def __init__(
        self,
        session: ClientSession,
        *,
        version: str | None,
        timeout: float,
        watch: TaskWatch | None,
        session_id: str = "",
        request: TaskRequest | None = None,
    ) -> None:
        self.session = session
        self.modern = modern(version)
        self.timeout = timeout
        self.watch = watch
        self.session_id = session_id
        self._request: TaskRequest = request or functools.partial(task_request, session)
        self._answered: set[str] = set()  # inputRequests keys already answered (they repeat per poll)
        self._last: tuple[str, str] | None = None

    def _report(self, state: TaskState) -> None:
        if self.watch is not None and (state.status, state.message) != self._last:
            self._last = (state.status, state.message)
            self.watch.on_status(dataclasses.replace(state, session=self.session_id))

    async def follow(self, state: TaskState) -> types.CallToolResult:
        """The task's result as a tool result. Raises MCPError for a failed task (or one the server
        no longer knows); cancelled (the caller stopped): `tasks/cancel` is sent, then re-raised."""
        try:
            return await self._poll(state)
        except anyio.get_cancelled_exc_class():
            # Shielded: the call is being stopped, and the server should hear of it. Any failure is
            # ignored: the call is stopped either way.
            wait = min(CANCEL_WAIT, self.timeout)
            with anyio.CancelScope(shield=True), anyio.move_on_after(wait), contextlib.suppress(Exception):
                await self._request("tasks/cancel", state.task_id, self.timeout)
            raise

    async def _poll(self, state: TaskState) -> types.CallToolResult:
        self._report(state)
        while True:
            if not self.modern and (state.status in TERMINAL or state.status == "input_required"):
                return await self._legacy_result(state)
            if not (self.modern and state.status in TERMINAL):  # a terminal seed: its result is one get away
                await anyio.sleep(state.poll)
            data = await self._request("tasks/get", state.task_id, self.timeout)
            state = state_of({**data, "taskId": data.get("taskId") or state.task_id})
            self._report(state)
            if self.modern:
                if (done := self._modern_end(state, data)) is not None:
                    return done
                if state.status == "input_required":
                    await self._answer(state, data.get("inputRequests") or {})

    def _modern_end(self, state: TaskState, data: dict[str, Any]) -> types.CallToolResult | None:
        if state.status == "completed":
            return types.CallToolResult.model_validate(data.get("result") or {"content": []})
        if state.status == "failed":
            error = data.get("error")
            error = error if isinstance(error, dict) else {}
            raise TaskFailed(code=int(error.get("code", types.INTERNAL_ERROR)), message=_failed(state, error))
        if state.status == "cancelled":
            return cancelled_result(state)
        return None

    async def _legacy_result(self, state: TaskState) -> types.CallToolResult:
        if state.status == "cancelled":
            return cancelled_result(state)
        # Terminal, or waiting for input: `tasks/result` answers once the task ended (a server asks
        # the user meanwhile over the ordinary elicitation request). No deadline: the task decides.
        data = await self._request("tasks/result", state.task_id, None)
        result = types.CallToolResult.model_validate({"content": [], **data})
        self._report(TaskState(state.task_id, "failed" if result.is_error else "completed", state.message, state.poll))
        return result

    async def _answer(self, state: TaskState, requests: dict[str, Any]) -> None:
        """Answer the task's new input requests (an elicitation: the user, as any other) with `tasks/update`."""
        responses: dict[str, Any] = {}
        for key, raw in requests.items():
            if key in self._answered:
                continue
            self._answered.add(key)
            request = _INPUT_REQUEST.validate_python(raw)
            ctx = ClientRequestContext(session=self.session, request_id=key, meta=None)
            answer = await self.session.dispatch_input_request(ctx, request)
            if isinstance(answer, types.ErrorData):
                answer = types.ElicitResult(action="cancel")
            responses[key] = answer.model_dump(by_alias=True, mode="json", exclude_none=True)
        if responses:
            await self._request("tasks/update", state.task_id, self.timeout, input_responses=responses)


class TaskFailed(MCPError):
    """The server says the task failed (not that it does not know the task)."""


def unrecoverable(task_id: str, exc: MCPError) -> MCPError:
    """A resumed task the server answers for with an error: it does not know the task (any more, or
    in this session), so its result is lost; said so, with the server's words."""
    detail = f" ({exc.message})" if exc.message else ""
    return MCPError(
        code=exc.code, message=f"the server no longer knows task {task_id}: its result could not be recovered{detail}"
    )


def cancelled_result(state: TaskState) -> types.CallToolResult:
    text = "The MCP server cancelled the task" + (f": {state.message}" if state.message else ".")
    return types.CallToolResult(content=[types.TextContent(text=text)], is_error=True)


def _failed(state: TaskState, error: dict[str, Any]) -> str:
    detail = str(error.get("message") or state.message or "no reason given")
    return f"the task failed: {detail}"
