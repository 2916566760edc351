"""The MCP host: runs the servers of mcp.json for this process and serves their tools.

Design
- Start-up. `start_mcp_host()` is the start-up hook of aptix/asgi.py's application: it runs once,
  when the process serves its first scope (aptix/startup.py), i.e. only in processes that serve
  the app: Daphne (which has no ASGI lifespan to hook) and `manage.py runworker`; never on import,
  so not in migrate, shell or the tests. It is idempotent and returns at once;
  `APTIX_MCP_AUTOSTART=false` turns it off.
- Threading. The host owns one daemon thread, "aptix-mcp", running its own asyncio event loop.
  Every server's session lives on that loop, so sessions outlive any request and do not depend on
  which loop a caller runs on (Daphne's reactor loop, a runworker loop, a test's loop). A registry
  entry's `execute` hands the call to the host loop with `run_coroutine_threadsafe` and awaits it
  with `asyncio.wrap_future`; cancelling the caller cancels the call (the server is told).
- Servers start in parallel, one supervisor task each (supervisor.py): connect, list the tools,
  publish them as `<server>__<tool>` in the MCP registry, refresh them on tools/list_changed,
  restart the server with backoff when it dies. Tools of a server that is down stay registered;
  calling them returns an error saying why the server is unavailable.
- Status. `status()` returns one immutable `ServerStatus` per configured server, readable from
  any thread; `wait_until()` awaits a condition on it from any loop (tests, `mcp_status`).
- Shutdown. An atexit hook stops the host: every session is closed, which closes each child's
  stdin, then SIGTERMs/SIGKILLs its process group. Children that outlive a killed web process are
  killed by the kernel (PR_SET_PDEATHSIG, see transport.py).
"""

from __future__ import annotations

import asyncio
import atexit
import logging
import threading
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

import mcp_types as types
from django.conf import settings

from aptix.logging import admin_logger
from tools.base import InvokeResult
from tools.registry import ToolRegistrationError, ToolRegistry, mcp_registry

from .config import McpConfigError, ServerConfig, load_config
from .entry import MAX_TOOL_NAME, Invoke, McpToolEntry, registry_name
from .supervisor import Published, ServerStatus, ServerSupervisor

logger = logging.getLogger("aptix.mcp")

STOP_TIMEOUT = 15.0  # seconds for all sessions to close at shutdown (each child gets ~2 s + 2 s)

Predicate = Callable[[list[ServerStatus]], bool]


class McpHost:
    """The servers of one config file, on one background thread, publishing into one registry."""

    def __init__(self, config_path: str | Path, *, registry: ToolRegistry = mcp_registry) -> None:
        self.config_path = Path(config_path)
        self.registry = registry
        self.config_error: str | None = None
        self._statuses: dict[str, ServerStatus] = {}
        self._supervisors: dict[str, ServerSupervisor] = {}
        self._entries: dict[str, dict[str, McpToolEntry]] = {}
        self._tasks: list[asyncio.Task] = []
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._stopped = False
        self._changed = asyncio.Event()  # replaced on every status change (see _status_changed)
        self._lock = threading.Lock()

    # --- life cycle (called from any thread) --------------------------------------------------

    def start(self) -> None:
        """Read the config and start the servers in the background. Idempotent."""
        with self._lock:
            if self._thread is not None:
                return
            configs = self._load_config()
            self._loop = asyncio.new_event_loop()
            self._thread = threading.Thread(target=self._run_loop, name="aptix-mcp", daemon=True)
            self._thread.start()
            asyncio.run_coroutine_threadsafe(self._start_servers(configs), self._loop)

    def _started_loop(self) -> asyncio.AbstractEventLoop:
        """The host loop; only called once `start()` has created it."""
        assert self._loop is not None
        return self._loop

    def stop(self, timeout: float = STOP_TIMEOUT) -> None:
        """Close every session (children are terminated) and end the host thread. Idempotent."""
        with self._lock:
            if self._thread is None or not self._thread.is_alive():
                return
            loop = self._started_loop()  # a thread runs, so start() created the loop
            try:
                asyncio.run_coroutine_threadsafe(self._stop_servers(), loop).result(timeout)
            except TimeoutError:
                logger.warning("MCP servers did not stop within %g s.", timeout)
            finally:
                self._stopped = True
                loop.call_soon_threadsafe(loop.stop)
                self._thread.join(timeout=5)
                self._withdraw_all()

    def _load_config(self) -> list[ServerConfig]:
        try:
            config = load_config(self.config_path)
        except McpConfigError as exc:
            self.config_error = str(exc)
            admin_logger.add_error(self.config_error, config=str(self.config_path))
            return []
        servers = {server.name: server for server in config.servers}
        for name in config.names:
            if name in config.errors:
                error = config.errors[name]
                admin_logger.add_error(str(error), server=name)
                self._statuses[name] = ServerStatus(name, "unknown", "failed", error=f"invalid config: {error.problem}")
            else:
                server = servers[name]
                state = "disabled" if server.disabled else "starting"
                self._statuses[name] = ServerStatus(name, server.type, state)
        return [server for server in config.servers if not server.disabled]

    def _run_loop(self) -> None:  # the "aptix-mcp" thread
        loop = self._started_loop()
        asyncio.set_event_loop(loop)
        try:
            loop.run_forever()
        finally:
            pending = asyncio.all_tasks(loop)
            for task in pending:
                task.cancel()
            loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
            loop.run_until_complete(loop.shutdown_asyncgens())
            loop.close()

    async def _start_servers(self, configs: list[ServerConfig]) -> None:
        for config in configs:
            supervisor = ServerSupervisor(config, publish=self._publish, on_change=self._status_changed)
            self._supervisors[config.name] = supervisor
            self._tasks.append(asyncio.create_task(supervisor.run(), name=f"mcp-{config.name}"))

    async def _stop_servers(self) -> None:
        for supervisor in self._supervisors.values():
            supervisor.stop()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    # --- status -------------------------------------------------------------------------------

    def status(self) -> list[ServerStatus]:
        """One snapshot per configured server, in config order."""
        return list(self._statuses.values())

    def _status_changed(self, status: ServerStatus) -> None:
        previous = self._statuses.get(status.name)
        self._statuses[status.name] = status
        if previous is None or previous.state != status.state:
            pid = f" (pid {status.pid})" if status.pid else ""
            logger.info(
                'MCP server "%s": %s%s',
                status.name,
                status.describe(),
                pid,
                extra={"server": status.name, "state": status.state},
            )
        changed, self._changed = self._changed, asyncio.Event()
        changed.set()

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

    # --- tools --------------------------------------------------------------------------------

    def _invoke_for(self, server: str) -> Invoke:
        async def invoke(tool: str, name: str, arguments: dict[str, Any]) -> InvokeResult:
            try:
                return await self._bridge(self._supervisors[server].call_tool(tool, name, arguments))
            except HostStopped:
                return InvokeResult.from_error(f'MCP server "{server}" is unavailable: stopped')

        return invoke

    async def _bridge(self, coro: Coroutine) -> Any:
        """Run `coro` on the host loop and await it from the caller's loop."""
        if self._loop is None or self._stopped:
            coro.close()
            raise HostStopped()
        return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(coro, self._loop))

    def _publish(self, server: str, tools: list[types.Tool]) -> Published:
        """Make the registry hold exactly these tools for `server`; unchanged entries are kept.
        Tools that cannot be published are reported, each with why (the supervisor logs them)."""
        current = self._entries.get(server, {})
        wanted: dict[str, McpToolEntry] = {}
        dropped: list[tuple[str, str]] = []
        for tool in tools:
            name = registry_name(server, tool.name)
            if name is None:
                dropped.append((tool.name, f"its name would be longer than {MAX_TOOL_NAME} characters as {server}__…"))
                continue
            if name in wanted:
                other = wanted[name].tool.name
                dropped.append((tool.name, f'its name collides with "{other}" (both become {name})'))
                continue
            entry = current.get(name)
            if entry is None or not entry.same_definition(tool):
                entry = McpToolEntry(server=server, tool=tool, name=name, invoke=self._invoke_for(server))
            wanted[name] = entry
        for name, entry in current.items():
            if wanted.get(name) is not entry and self.registry.get(name) is entry:
                self.registry.unregister(name)
        published = {}
        for name, entry in wanted.items():
            problem = self._register(entry)
            if problem:
                dropped.append((entry.tool.name, problem))
            else:
                published[name] = entry
        self._entries[server] = published
        renamed = tuple((name, entry.tool.name) for name, entry in published.items() if entry.label != entry.tool.name)
        return Published(names=tuple(published), dropped=tuple(dropped), renamed=renamed)

    def _register(self, entry: McpToolEntry) -> str:
        """Register `entry` unless it already is; the problem when the registry refuses it."""
        if self.registry.get(entry.TOOL_NAME) is entry:
            return ""
        try:
            self.registry.register(entry)
        except ToolRegistrationError as exc:
            return str(exc)
        return ""

    def _withdraw_all(self) -> None:
        for entries in self._entries.values():
            for name, entry in entries.items():
                if self.registry.get(name) is entry:
                    self.registry.unregister(name)
        self._entries.clear()


class HostStopped(RuntimeError):
    """The MCP host is not running (any more)."""


_host: McpHost | None = None
_host_lock = threading.Lock()


def start_mcp_host() -> McpHost | None:
    """Start this process's MCP host, unless APTIX_MCP_AUTOSTART is off. Idempotent; returns at
    once (servers come up in the background). Stopped by an atexit hook."""
    global _host  # noqa: PLW0603 - the one host of this process, created under _host_lock
    if not settings.APTIX_MCP_AUTOSTART:
        return None
    with _host_lock:
        if _host is None:
            _host = McpHost(settings.APTIX_MCP_CONFIG)
            _host.start()
            atexit.register(_host.stop)
    return _host


def mcp_status() -> list[ServerStatus]:
    """The status of this process's MCP servers (empty when the host is not running here)."""
    return _host.status() if _host is not None else []


def mcp_config_error() -> str | None:
    """Why this process's host could not use its config file at all (not JSON, no "mcpServers"
    object, missing), or None. Servers with a broken entry show their error in `mcp_status()`."""
    return _host.config_error if _host is not None else None
