"""Waiting on the MCP host's server statuses, from any event loop (tests, `mcp_status`, and a tool call
for a server that is still starting). A mixin of McpHost, which provides `status()`, `_changed` (an
asyncio.Event replaced on every status change), `_bridge()` (run a coroutine on the host loop),
`_started_loop()` and `_supervisors`."""

from __future__ import annotations

import asyncio
import contextvars
import weakref
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any

from .status import ServerStatus

if TYPE_CHECKING:
    from tools.registry import ToolRegistry

    from .supervisor import ServerSupervisor
    from .userpool import UserPool

Predicate = Callable[[list[ServerStatus]], bool]
RUNNING: weakref.WeakSet[StatusWaits] = weakref.WeakSet()  # hosts between start() and stop()


def starting_host(registry: ToolRegistry, server: str) -> StatusWaits | None:
    """The running host that publishes into `registry` and is starting `server` now, if any: a call
    for one of its tools waits for it (`wait_started`) rather than failing as unknown."""
    for host in list(RUNNING):
        if host.registry is registry and any(s.name == server and s.state == "starting" for s in host.status()):
            return host
    return None


def server_type(registry: ToolRegistry, server: str) -> str | None:
    """The transport ("stdio", "http", "sse") of `server` as a running host publishing into
    `registry` runs it (None: none does): a task of an HTTP server outlives the process that called."""
    for host in list(RUNNING):
        supervisor = host._supervisors.get(server) if host.registry is registry else None
        if supervisor is not None:
            return supervisor.config.type
    return None


class StatusWaits:
    registry: ToolRegistry
    _changed: asyncio.Event
    _supervisors: dict[str, ServerSupervisor | UserPool]

    def status(self) -> list[ServerStatus]:
        raise NotImplementedError

    def _started_loop(self) -> asyncio.AbstractEventLoop:
        raise NotImplementedError

    async def _bridge(self, coro: Coroutine) -> Any:
        raise NotImplementedError

    async def bridge_alone(self, coro: Coroutine) -> Any:
        """`_bridge` in an empty context, for a call a web request makes: the request's context
        (asgiref's thread-sensitive executor, on the request's thread) must not follow it onto the
        host loop, where a per-user server reads the user's credentials with sync_to_async and would
        wait for that thread, which waits for the call. The user goes as an argument instead."""
        return await asyncio.create_task(self._bridge(coro), context=contextvars.Context())

    async def wait_until(self, predicate: Predicate, timeout: float) -> list[ServerStatus]:
        """Wait (from any event loop) until `predicate(status())` holds; TimeoutError otherwise."""
        return await self._bridge(self._wait_until(predicate, timeout))

    def wait_until_sync(self, predicate: Predicate, timeout: float) -> list[ServerStatus]:
        loop = self._started_loop()  # called after start()
        return asyncio.run_coroutine_threadsafe(self._wait_until(predicate, timeout), loop).result()

    async def _wait_until(self, predicate: Predicate, timeout: float) -> list[ServerStatus]:
        try:
            async with asyncio.timeout(timeout):
                while True:
                    changed = self._changed
                    statuses = self.status()
                    if predicate(statuses):
                        return statuses
                    await changed.wait()
        except TimeoutError:
            summary = "; ".join(f"{s.name}: {s.describe()}" for s in self.status())
            raise TimeoutError(
                f"MCP servers did not reach the expected state within {timeout:g} s ({summary})"
            ) from None

    async def wait_started(self, server: str) -> bool:
        """Wait (from any loop) while `server` is starting, within its start-up and listing timeouts;
        whether it is ready then (False at once for a server this host does not run)."""
        supervisor = self._supervisors.get(server)
        if supervisor is None:
            return False
        try:
            statuses = await self.wait_until(
                lambda statuses: all(s.state != "starting" for s in statuses if s.name == server),
                supervisor.config.init_timeout + supervisor.config.timeout,
            )
        except TimeoutError:
            return False
        return any(s.name == server and s.state == "ready" for s in statuses)
