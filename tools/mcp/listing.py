"""Between a transport and the SDK client: tools/list answers are checked one tool at a time.

The SDK validates a tools/list result as a whole, so one tool with a broken definition (an
`inputSchema` without `"type": "object"`, say) fails the whole listing and the server never comes
up. Here each tool of the raw answer is validated against the negotiated protocol version first; a
broken one is taken out, with its error kept in `rejected` for the status, and the rest of the
listing reaches the SDK intact. So is a tool whose `inputSchema` or `outputSchema` is not valid JSON
Schema (`"type": "strin"`: model providers refuse a whole request over one such schema), and one
that can only run as an MCP task (`execution.taskSupport: "required"`) on a server that does not
declare task support for tools/call (tasks.py): it would refuse every plain call of it (-32601) after
the user approved it. Where the server runs tasks, such a tool is offered and called as a task.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from functools import lru_cache
from typing import Any, Protocol

import jsonschema
import mcp_types as types
from mcp.shared.message import SessionMessage
from mcp_types import methods
from mcp_types.version import LATEST_HANDSHAKE_VERSION
from pydantic import ValidationError

LIST_METHOD = "tools/list"
SCHEMA_KEYS = ("inputSchema", "outputSchema")
TASKS_REQUIRED = (
    'it runs only as an MCP task (execution.taskSupport "required"), '
    "but the server does not declare task support for tools/call"
)


class ToolListing:
    """Remembers which requests are tools/list and filters their answers. `rejected` maps the name
    of each tool taken out of the latest listing to why."""

    def __init__(self, version: Callable[[], str | None], runs_tasks: Callable[[], bool] = lambda: False) -> None:
        self._version = version
        self._runs_tasks = runs_tasks
        self._pending: set[types.RequestId] = set()
        self.rejected: dict[str, str] = {}
        self._rejected_now: dict[str, str] = {}

    def sent(self, item: Any) -> None:
        message = getattr(item, "message", None)
        if isinstance(message, types.JSONRPCRequest) and message.method == LIST_METHOD:
            self._pending.add(message.id)
            if not (message.params or {}).get("cursor"):
                self._rejected_now = {}  # a new listing starts

    def received(self, item: Any) -> Any:
        message = getattr(item, "message", None)
        if not isinstance(message, (types.JSONRPCResponse, types.JSONRPCError)) or message.id not in self._pending:
            return item
        self._pending.discard(message.id)
        if isinstance(message, types.JSONRPCResponse) and isinstance(message.result.get("tools"), list):
            message.result["tools"] = self._valid(message.result)
            if message.result.get("nextCursor") is None:
                self.rejected = self._rejected_now
        return item

    def _valid(self, result: dict[str, Any]) -> list[Any]:
        version = self._version() or LATEST_HANDSHAKE_VERSION
        kept = []
        for index, tool in enumerate(result["tools"]):
            try:
                methods.validate_server_result(LIST_METHOD, version, {**result, "tools": [tool]})
            except ValidationError as exc:
                name = tool.get("name") if isinstance(tool, dict) else None
                self._rejected_now[str(name or f"#{index + 1}")] = _problem(exc)
            except (KeyError, ValueError):
                kept.append(tool)  # a version this SDK does not validate: leave it to the SDK
            else:
                problem = unofferable(tool, tasks=self._runs_tasks())
                if problem:
                    self._rejected_now[str(tool.get("name") or f"#{index + 1}")] = problem
                else:
                    kept.append(tool)
        return kept


def unofferable(tool: dict[str, Any], *, tasks: bool = False) -> str:
    """Why a tool that is valid MCP cannot be offered ("" when it can): a schema that is not JSON
    Schema, or a tool that needs tasks of a server that does not run them (`tasks`: it does)."""
    for key in SCHEMA_KEYS:
        if isinstance(tool.get(key), dict):
            problem = schema_problem(json.dumps(tool[key], sort_keys=True))
            if problem:
                return f"invalid definition: {key} is not valid JSON Schema: {problem}"
    execution = tool.get("execution")
    if isinstance(execution, dict) and execution.get("taskSupport") == "required" and not tasks:
        return TASKS_REQUIRED
    return ""


@lru_cache(maxsize=1024)  # servers repeat schemas, and list their tools again on every change
def schema_problem(schema_json: str) -> str:
    """What makes the schema invalid against its meta-schema (its `$schema`, else JSON Schema
    2020-12, the MCP default), or ""."""
    schema = json.loads(schema_json)
    if not isinstance(schema.get("$schema", ""), str):
        return "$schema: must be a string"
    validator = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    try:
        validator.check_schema(schema)
    except jsonschema.SchemaError as exc:
        where = ".".join(str(part) for part in exc.path)
        return f"{where}: {exc.message}" if where else exc.message
    return ""


def _problem(exc: ValidationError) -> str:
    """'invalid definition: inputSchema.type: Field required' (the path inside the tool)."""
    parts = []
    for error in exc.errors()[:3]:
        location = ".".join(str(part) for part in error["loc"][2:]) or "tool"
        parts.append(f"{location}: {error['msg']}")
    return "invalid definition: " + "; ".join(parts)


class Observer(Protocol):
    """What sees each message between a transport and the SDK (ToolListing, http.HttpWatch)."""

    def sent(self, item: Any) -> None: ...

    def received(self, item: Any) -> Any: ...


class _Reader:
    def __init__(self, stream: Any, observers: tuple[Observer, ...]) -> None:
        self._stream = stream
        self._observers = observers

    def __getattr__(self, name: str) -> Any:  # last_context, aclose, ...
        return getattr(self._stream, name)

    def _received(self, item: Any) -> Any:
        for observer in self._observers:
            item = observer.received(item)
        return item

    async def receive(self) -> Any:
        return self._received(await self._stream.receive())

    def __aiter__(self) -> _Reader:
        return self

    async def __anext__(self) -> Any:
        return self._received(await self._stream.__anext__())

    async def __aenter__(self) -> _Reader:
        await self._stream.__aenter__()
        return self

    async def __aexit__(self, *exc_info: Any) -> bool | None:
        return await self._stream.__aexit__(*exc_info)


class _Writer:
    def __init__(self, stream: Any, observers: tuple[Observer, ...]) -> None:
        self._stream = stream
        self._observers = observers

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)

    async def send(self, item: SessionMessage) -> None:
        for observer in self._observers:
            observer.sent(item)
        await self._stream.send(item)

    async def __aenter__(self) -> _Writer:
        await self._stream.__aenter__()
        return self

    async def __aexit__(self, *exc_info: Any) -> bool | None:
        return await self._stream.__aexit__(*exc_info)


@asynccontextmanager
async def filtered(transport: Any, *observers: Observer) -> AsyncIterator[tuple[Any, Any]]:
    """The transport's (read, write) streams with every message shown to the `observers`, in order
    (the ToolListing filters tools/list answers)."""
    async with transport as streams:
        read, write = streams[0], streams[1]
        yield _Reader(read, observers), _Writer(write, observers)
