"""An MCP server (our mcp 2.x) that runs a tool as a task, per the tasks extension of 2026-07-28
(`io.modelcontextprotocol/tasks`): over stdio with `python task_server.py`, over streamable HTTP
through `http_fixture_server.py --tasks --modern`.

- `research(topic, stages, stage_seconds)` answers with a task (`resultType: "task"`) at once, then
  works through `stages` stages, a status message each, and completes with a report. Only a client
  that declared the extension gets a task; any other is refused (-32021), as the extension says.
- `ask_then_finish(topic)`: a task that needs the user's answer first (`input_required`, a form
  asking for a colour) and completes with it.
- `make_task(topic, stages, stage_seconds)`: starts a research task no call waits for (as one whose
  caller died) and returns its id, for a test that follows it by id alone.
- `tasks_seen()`: what happened to every task so far (created, cancelled, completed), as JSON, so a
  test sees a `tasks/cancel` arrive.
Tasks live in this process's memory: a client that dies and comes back finds them (the HTTP case).
"""

from __future__ import annotations

import asyncio
import json
import uuid
from datetime import UTC, datetime
from typing import Any

import mcp_types as types
from mcp import MCPError
from mcp.server.mcpserver import Extension, MCPServer, MethodBinding, require_client_extension

EXTENSION = "io.modelcontextprotocol/tasks"
POLL_MS = 200
COLOUR = {"type": "object", "properties": {"colour": {"type": "string", "title": "Colour"}}, "required": ["colour"]}


class Task:
    def __init__(self) -> None:
        self.id = uuid.uuid4().hex
        self.created = _now()
        self.status = "working"
        self.message = "Starting"
        self.result: dict[str, Any] | None = None
        self.inputs: dict[str, Any] = {}  # key → the input request, while it waits
        self.answers: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self.work: asyncio.Task | None = None

    def view(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "taskId": self.id,
            "status": self.status,
            "statusMessage": self.message,
            "createdAt": self.created,
            "lastUpdatedAt": _now(),
            "ttlMs": 3_600_000,
            "pollIntervalMs": POLL_MS,
        }
        if self.status == "completed":
            data["result"] = self.result
        if self.status == "input_required":
            data["inputRequests"] = self.inputs
        return data


TASKS: dict[str, Task] = {}
SEEN: list[list[str]] = []  # [task id, what happened]


def _text(text: str) -> dict[str, Any]:
    """A tool result of these str-returning tools (their output schema wants the structured copy)."""
    return {"content": [{"type": "text", "text": text}], "structuredContent": {"result": text}, "isError": False}


def _now() -> str:
    return datetime.now(UTC).isoformat()


async def _research(task: Task, topic: str, stages: int, stage_seconds: float) -> None:
    for stage in range(1, stages + 1):
        task.message = f"Stage {stage} of {stages}: reading about {topic}"
        await asyncio.sleep(stage_seconds)
    task.result = _text(f"Report on {topic}: {stages} stages done")
    task.status, task.message = "completed", "Done"
    SEEN.append([task.id, "completed"])


async def _ask(task: Task, topic: str) -> None:
    task.inputs = {
        "colour": {"method": "elicitation/create", "params": {"message": "Which colour?", "requestedSchema": COLOUR}}
    }
    task.status, task.message = "input_required", "Waiting for a colour"
    answers = await task.answers.get()
    answer = answers.get("colour") or {}
    task.inputs, task.status, task.message = {}, "working", "Got an answer"
    await asyncio.sleep(0.1)
    colour = (answer.get("content") or {}).get("colour", "none")
    task.result = _text(f"{topic} in {colour} ({answer.get('action')})")
    task.status, task.message = "completed", "Done"
    SEEN.append([task.id, "completed"])


class TasksExtension(Extension):
    identifier = EXTENSION

    def methods(self) -> list[MethodBinding]:
        return [
            MethodBinding(method="tasks/get", params_type=TaskParams, handler=get),
            MethodBinding(method="tasks/cancel", params_type=TaskParams, handler=cancel),
            MethodBinding(method="tasks/update", params_type=UpdateParams, handler=update),
        ]

    async def intercept_tool_call(self, params: types.CallToolRequestParams, ctx: Any, call_next: Any) -> Any:
        if params.name not in ("research", "ask_then_finish"):
            return await call_next(ctx)
        require_client_extension(ctx, EXTENSION)
        arguments = params.arguments or {}
        task = Task()
        TASKS[task.id] = task
        SEEN.append([task.id, "created"])
        topic = str(arguments.get("topic", "something"))
        if params.name == "research":
            work = _research(task, topic, int(arguments.get("stages", 3)), float(arguments.get("stage_seconds", 0.3)))
        else:
            work = _ask(task, topic)
        task.work = asyncio.get_running_loop().create_task(work)
        return {"resultType": "task", **task.view()}


class TaskParams(types.RequestParams):
    task_id: str


class UpdateParams(TaskParams):
    input_responses: dict[str, Any] | None = None


def _task(params: TaskParams) -> Task:
    task = TASKS.get(params.task_id)
    if task is None:
        raise MCPError(code=types.INVALID_PARAMS, message=f"Failed to retrieve task: no task {params.task_id}")
    return task


async def get(ctx: Any, params: TaskParams) -> dict[str, Any]:
    return _task(params).view()


async def cancel(ctx: Any, params: TaskParams) -> dict[str, Any]:
    task = _task(params)
    if task.status not in ("completed", "failed", "cancelled"):
        if task.work is not None:
            task.work.cancel()
        task.status, task.message = "cancelled", "Cancelled by the client"
        SEEN.append([task.id, "cancelled"])
    return {}


async def update(ctx: Any, params: UpdateParams) -> dict[str, Any]:
    await _task(params).answers.put(params.input_responses or {})
    return {}


server = MCPServer("tasks", extensions=[TasksExtension()])


@server.tool()
def research(topic: str, stages: int = 3, stage_seconds: float = 0.3) -> str:
    """Research a topic in stages (runs as a task)."""
    return "never runs: answered with a task"


@server.tool()
def ask_then_finish(topic: str) -> str:
    """Ask the user for a colour, then finish (runs as a task)."""
    return "never runs: answered with a task"


@server.tool()
async def make_task(topic: str, stages: int = 3, stage_seconds: float = 0.3) -> str:
    """Start a research task no call waits for (as one whose caller died) and return its id."""
    task = Task()
    TASKS[task.id] = task
    SEEN.append([task.id, "created"])
    task.work = asyncio.get_running_loop().create_task(_research(task, topic, stages, stage_seconds))
    return task.id


@server.tool()
def tasks_seen() -> str:
    """What happened to each task so far, as JSON."""
    return json.dumps(SEEN)


if __name__ == "__main__":
    server.run()
