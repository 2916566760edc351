"""Keeps one MCP server running: start, list and publish its tools, refresh them on
tools/list_changed, notice its death at once, restart it with backoff, and serve its tool calls.

Everything here runs on the MCP host's event loop (see host.py).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from datetime import UTC, datetime

import anyio
import mcp_types as types
from mcp import MCPError

from aptix.logging import admin_logger
from tools.base import InvokeResult

from .config import ServerConfig
from .connection import Connection, ConnectionLost, StartupError, connect
from .entry import format_result

logger = logging.getLogger("aptix.mcp")

BACKOFF_FIRST = 0.5  # seconds before the first restart; doubles per attempt
BACKOFF_MAX = 30.0
STABLE_AFTER = 30.0  # a server that ran this long before dying starts again from the first delay
END_MESSAGE_WAIT = 10.0  # covers the transport's stop sequence (grace + SIGTERM + SIGKILL)

# (server name, its tools) -> the registry names now published for them
Publish = Callable[[str, list[types.Tool]], tuple[str, ...]]


@dataclass(frozen=True)
class ServerStatus:
    """A snapshot, replaced (never mutated) on every change, so any thread may read it.

    state: starting | ready | restarting | failed | disabled | stopped"""

    name: str
    type: str
    state: str
    tools: tuple[str, ...] = ()
    error: str | None = None
    pid: int | None = None
    started_at: datetime | None = None
    restarts: int = 0
    attempt: int = 0

    @property
    def settled(self) -> bool:
        """Done starting, one way or the other."""
        return self.state in ("ready", "failed", "disabled", "stopped")

    def describe(self) -> str:
        if self.state == "ready":
            return f"ready with {len(self.tools)} tool{'s' if len(self.tools) != 1 else ''}"
        if self.state == "restarting":
            return f"restarting (attempt {self.attempt})"
        if self.state == "failed":
            return f"failed: {self.error}"
        return self.state

    def as_dict(self) -> dict:
        data = asdict(self)
        data["tools"] = list(self.tools)
        data["started_at"] = self.started_at.isoformat() if self.started_at else None
        return data


def backoff_delay(attempt: int) -> float:
    return min(BACKOFF_FIRST * 2 ** (attempt - 1), BACKOFF_MAX)


class ServerSupervisor:
    def __init__(self, config: ServerConfig, *, publish: Publish, on_change: Callable[[ServerStatus], None]) -> None:
        self.config = config
        self.status = ServerStatus(config.name, config.type, "starting")
        self._publish = publish
        self._on_change = on_change
        self._connection: Connection | None = None
        self._attempt = 0  # restart attempts since the server last ran for STABLE_AFTER seconds
        self._scope = anyio.CancelScope()  # construct on the host loop (anyio needs a running loop)

    @property
    def name(self) -> str:
        return self.config.name

    def _update(self, **changes) -> None:
        self.status = replace(self.status, **changes)
        self._on_change(self.status)

    def stop(self) -> None:
        self._scope.cancel()

    async def run(self) -> None:
        """Start the server, then keep it running until `stop()`."""
        with self._scope:
            while True:
                try:
                    await self._serve_once()
                except StartupError as exc:
                    if self.status.state == "starting":
                        # It never came up: a configuration problem that retrying will not fix.
                        admin_logger.add_error(f'MCP server "{self.name}" failed to start: {exc}', server=self.name)
                        self._update(state="failed", error=str(exc), pid=None)
                        return
                    self._restarting(f"restart failed: {exc}")
                except Exception as exc:  # noqa: BLE001 - a bug here must not end the supervision
                    admin_logger.add_exception(exc, "McpSupervisor.Failed", server=self.name)
                    self._restarting(f"{type(exc).__name__}: {exc}")
                await anyio.sleep(backoff_delay(self._attempt))
        if self._scope.cancelled_caught:
            self._update(state="stopped", tools=(), pid=None, attempt=0)

    def _restarting(self, error: str) -> None:
        self._attempt += 1
        self._update(
            state="restarting", attempt=self._attempt, restarts=self.status.restarts + 1, error=error, pid=None
        )

    async def _serve_once(self) -> None:
        """Connect, publish the tools and serve until the server goes away on its own."""
        connection = None
        try:
            async with connect(self.config) as connection:
                await self._start(connection)
                started = time.monotonic()
                try:
                    await self._watch(connection)
                finally:
                    self._connection = None
                if time.monotonic() - started >= STABLE_AFTER:
                    self._attempt = 0
                self._restarting("stopped unexpectedly")  # at once: calls now see "restarting"
            # The connection is closed, so the child has been reaped: its exit code is known.
            message = self._end_message(connection)
            admin_logger.add_error(f'MCP server "{self.name}" {message}', server=self.name, pid=connection.pid)
            self._update(error=message)
            connection.end_message.set_result(f'MCP server "{self.name}" {message}; restarting')
        finally:
            if connection is not None and not connection.end_message.done():
                connection.end_message.set_result(f'MCP server "{self.name}" was stopped')

    async def _start(self, connection: Connection) -> None:
        try:
            await self._refresh(connection)
        except (MCPError, TimeoutError) as exc:
            raise StartupError(f"could not list its tools: {exc}") from exc
        self._connection = connection
        self._update(state="ready", pid=connection.pid, started_at=datetime.now(UTC), attempt=0)

    async def _watch(self, connection: Connection) -> None:
        async with anyio.create_task_group() as tg:
            tg.start_soon(connection.listen_for_tool_changes)
            tg.start_soon(self._refresh_on_change, connection)
            await connection.lost.wait()
            tg.cancel_scope.cancel()

    async def _refresh(self, connection: Connection) -> None:
        with anyio.fail_after(self.config.timeout):
            tools = await connection.list_tools()
        self._update(tools=self._publish(self.name, tools))

    async def _refresh_on_change(self, connection: Connection) -> None:
        while True:
            await connection.tools_changed.wait()
            connection.tools_changed.clear()
            try:
                await self._refresh(connection)
            except Exception as exc:  # noqa: BLE001 - the previous tool list stays in use
                logger.warning(
                    'MCP server "%s": could not refresh its tools (%s: %s)',
                    self.name,
                    type(exc).__name__,
                    exc,
                    extra={"server": self.name},
                )

    @staticmethod
    def _end_message(connection: Connection) -> str:
        if connection.child is None:
            return "closed the connection unexpectedly"
        code = connection.child.returncode
        return "stopped unexpectedly" + (f" (exit code {code})" if code is not None else "")

    async def call_tool(self, tool: str, name: str, arguments: dict) -> InvokeResult:
        """Call `tool` (the server's name for it; `name` is the registry's) on the live session."""
        connection = self._connection
        if connection is None:
            return InvokeResult.from_error(self.unavailable_message())
        try:
            result = await connection.call_tool(tool, arguments)
        except TimeoutError:
            return InvokeResult.from_error(f'MCP tool "{name}" timed out after {self.config.timeout:g} s')
        except ConnectionLost:
            return InvokeResult.from_error(await self._lost_message(connection))
        except MCPError as exc:
            return InvokeResult.from_error(f'MCP tool "{name}" failed: {exc.message}')
        except Exception as exc:  # noqa: BLE001 - e.g. a result that breaks the protocol
            admin_logger.add_exception(exc, "McpTool.Failed", tool=name, server=self.name)
            return InvokeResult.from_error(f'MCP tool "{name}" failed: {type(exc).__name__}: {exc}')
        return format_result(result, name)

    def unavailable_message(self) -> str:
        return f'MCP server "{self.name}" is unavailable: {self.status.describe()}'

    async def _lost_message(self, connection: Connection) -> str:
        try:
            return await asyncio.wait_for(asyncio.shield(connection.end_message), END_MESSAGE_WAIT)
        except TimeoutError:
            return f'MCP server "{self.name}" stopped unexpectedly; restarting'
