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
  publish them as `<server>__<tool>` in the MCP registry, refresh them on tools/list_changed
  (prompts and resources on theirs),
  restart the server with backoff when it dies. Tools of a server that is down stay registered;
  calling them returns an error saying why. Each server is known to the registry by name as a
  `HostedServer` (entry.py ServerPort: its transport, whether it acts as each user), which its
  tools' entries call through; a call for a server still starting (a turn resumed by an approval
  right after a restart) waits for it with `wait_started()`.
- Requests. `call_tool` (an entry's, with the call's CallContext), `read_resource`, `get_prompt`,
  `complete`, `subscribe_resource` and `prompts` go to the server's runner on the host loop; a web
  request's carry its user.
- Status. `status()`: one immutable `ServerStatus` per configured server, for any thread;
  `wait_until()` awaits a condition on it from any loop; `logs(name)` a server's last lines (logs.py).
- Live changes. `reload()` re-reads the config and starts, stops or restarts only the servers whose
  parsed entry changed; `restart(name)` restarts one server. Both run on the host loop; a
  replaced supervisor's late status updates and tool lists are ignored, and its successor starts
  once it has stopped (so a server never runs twice). With `reload_poll`, the host also reloads by
  itself when the config file or the reload request file changes, and restarts the servers named
  in new lines of the restart request file (reload.py says why files); `request_restart()` writes
  such a line and applies it here at once (the admin's Restart buttons).
- Shutdown. An atexit hook stops the host: every session is closed (each child's stdin, then
  SIGTERM/SIGKILL of its group; the kernel kills those of a killed process, transport.py).
"""

from __future__ import annotations

import asyncio
import atexit
import contextvars
import logging
import threading
from collections.abc import Callable, Coroutine, Iterable
from pathlib import Path
from typing import Any

import mcp_types as types
from django.conf import settings

from aptix.logging import admin_logger
from tools.base import CallContext, InvokeResult
from tools.registry import ToolRegistry, mcp_registry

from .apps import AppResource, NotAnApp
from .completion import NONE, CompletionRequest, Suggestions, check_target
from .config import McpConfigError, ServerConfig, ServerConfigError, load_config
from .connection import Progress
from .hosted import HostedServer
from .logs import ServerLog
from .prompts import PromptInfo, PromptRefused, RenderedPrompt, clean_arguments, not_offered, rendered
from .publisher import ToolPublisher
from .reload import (
    RELOAD_POLL,
    REQUEST_FILE,
    RESTART_FILE,
    Entry,
    FileWatch,
    ReloadResult,
    RestartRequests,
    entries,
    log_ignored_keys,
    request_restart,
    runnable,
    same,
)
from .status import ServerStatus
from .supervisor import Published, ServerSupervisor, end_subscriptions
from .userpool import UserPool, make_runner

logger = logging.getLogger("aptix.mcp")

STOP_TIMEOUT = 15.0  # seconds for all sessions to close at shutdown (each child gets ~2 s + 2 s)
Predicate = Callable[[list[ServerStatus]], bool]


class McpHost:
    """The servers of one config file, on one background thread, publishing into one registry."""

    def __init__(
        self,
        config_path: str | Path,
        *,
        registry: ToolRegistry = mcp_registry,
        reload_file: Path | None = None,
        restart_file: Path | None = None,
        reload_poll: float = 0.0,
    ) -> None:
        self.config_path = Path(config_path)
        self.registry = registry
        self.config_error: str | None = None
        self.kept_errors: dict[str, str] = {}  # server → why its changed entry was not applied
        self.reload_file = reload_file
        self.restart_file = restart_file  # restart requests for every host on the machine (reload.py)
        self.reload_poll = reload_poll  # seconds between looks at the config and request files; 0: never
        self._own_requests: set[str] = set()  # restart requests this host wrote, and so applied already
        self._config: dict[str, Entry] = {}  # what runs now, as parsed
        self._statuses: dict[str, ServerStatus] = {}
        self._supervisors: dict[str, ServerSupervisor | UserPool] = {}
        self._logs: dict[str, ServerLog] = {}
        self._tools = ToolPublisher(registry, lambda server: HostedServer(self, server))
        self._tasks: dict[str, asyncio.Task] = {}
        self._retired: set[asyncio.Task] = set()  # replaced supervisors, still stopping
        self._watch: asyncio.Task | None = None
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
            watch = FileWatch([self.config_path, *([self.reload_file] if self.reload_file else [])])
            restarts = RestartRequests(self.restart_file) if self.restart_file else None
            configs = self._load_config()
            self._loop = asyncio.new_event_loop()
            self._thread = threading.Thread(target=self._run_loop, name="aptix-mcp", daemon=True)
            self._thread.start()
            for config in configs:  # known at once: a call for one of its tools waits while it starts
                self.registry.add_server(config.name, HostedServer(self, config.name))
            asyncio.run_coroutine_threadsafe(self._start_servers(configs, watch, restarts), self._loop)

    def _started_loop(self) -> asyncio.AbstractEventLoop:  # only called once start() created it
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
                self._tools.withdraw_all()
                for name in list(self._config):
                    self.registry.remove_server(name, HostedServer(self, name))

    def _load_config(self) -> list[ServerConfig]:
        try:
            config = load_config(self.config_path)
        except McpConfigError as exc:
            self.config_error = str(exc)
            admin_logger.add_error(self.config_error, config=str(self.config_path))
            return []
        self._config = entries(config)
        for name, entry in self._config.items():
            self._statuses[name] = self._initial_status(name, entry)
        log_ignored_keys(self._config.values())
        return [server for server in config.servers if not server.disabled]

    @staticmethod
    def _initial_status(name: str, entry: Entry) -> ServerStatus:
        if isinstance(entry, ServerConfigError):
            admin_logger.add_error(str(entry), server=name)
            return ServerStatus(name, "unknown", "failed", error=f"invalid config: {entry.problem}")
        return ServerStatus(name, entry.type, "disabled" if entry.disabled else "starting")

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

    async def _start_servers(
        self, configs: list[ServerConfig], watch: FileWatch, restarts: RestartRequests | None
    ) -> None:
        for config in configs:
            self._spawn(config)
        if self.reload_poll:
            self._watch = asyncio.create_task(self._watch_files(watch, restarts), name="mcp-reload-watch")

    def _spawn(self, config: ServerConfig, after: asyncio.Task | None = None) -> None:
        """Run a supervisor for `config` (once `after`, the one it replaces, has ended)."""
        log = self._logs.setdefault(config.name, ServerLog(config.name))

        def on_change(status: ServerStatus) -> None:
            if self._supervisors.get(config.name) is supervisor:  # not a replaced one
                self._status_changed(status)

        def publish(server: str, tools: list[types.Tool]) -> Published:
            current = self._supervisors.get(server) is supervisor
            return self._tools.publish(server, tools) if current else Published(names=())

        # A per-user entry gets a UserPool: a connection per (server, user) (userpool.py).
        supervisor = make_runner(config, publish=publish, on_change=on_change, log=log)
        self._supervisors[config.name] = supervisor
        self.registry.add_server(config.name, HostedServer(self, config.name))

        async def run() -> None:
            if after is not None:
                await asyncio.gather(after, return_exceptions=True)
            await supervisor.run()

        self._tasks[config.name] = asyncio.create_task(run(), name=f"mcp-{config.name}")

    async def _stop_servers(self) -> None:
        await end_subscriptions(self._supervisors.values(), STOP_TIMEOUT / 3)
        for supervisor in self._supervisors.values():
            supervisor.stop()
        if self._watch is not None:
            self._watch.cancel()
        await asyncio.gather(*self._tasks.values(), *self._retired, return_exceptions=True)

    # --- live changes -------------------------------------------------------------------------

    def reload(self, timeout: float = 10.0) -> ReloadResult:
        """Re-read the config and apply what changed (from any thread but the host's). Returns once
        the changes are under way: servers start, stop and restart in the background."""
        return asyncio.run_coroutine_threadsafe(self._reload(), self._started_loop()).result(timeout)

    def restart(self, name: str, timeout: float = 10.0) -> bool:
        """Restart one server with its current config; False when it is not running here (unknown,
        disabled, or its entry is broken)."""
        return asyncio.run_coroutine_threadsafe(self._restart(name), self._started_loop()).result(timeout)

    def request_restart(self, servers: list[str] | None, timeout: float = 10.0) -> tuple[str, ...]:
        """Restart `servers` (None: all) here at once and, through the restart request file, in every
        other web and worker process; returns the names restarted here (see `_restart_servers`)."""
        coro = self._request_restart(None if servers is None else tuple(servers))
        return asyncio.run_coroutine_threadsafe(coro, self._started_loop()).result(timeout)

    async def _request_restart(self, servers: tuple[str, ...] | None) -> tuple[str, ...]:
        if self.restart_file is not None:
            _, request_id = request_restart(self.restart_file.parent, servers)
            self._own_requests.add(request_id)
        return await self._restart_servers(servers)

    async def _restart_servers(self, servers: tuple[str, ...] | None) -> tuple[str, ...]:
        """Apply any change to the config, then restart `servers` (None: all) unless that change just
        (re)started them; the names now starting anew. Servers not running here are skipped."""
        result = await self._reload()
        fresh = set(result.started) | set(result.restarted)
        restarted = []
        for name in servers if servers is not None else tuple(self._config):
            if name in fresh or await self._restart(name):
                restarted.append(name)
        if restarted:
            logger.info("MCP servers restarted on request: %s", ", ".join(restarted))
        return tuple(restarted)

    async def _restart(self, name: str) -> bool:
        config = runnable(self._config.get(name))
        if config is None or self._stopped:
            return False
        self._replace(name, config)
        return True

    async def _reload(self) -> ReloadResult:
        try:
            config = load_config(self.config_path)
        except McpConfigError as exc:
            self.config_error = str(exc)
            admin_logger.add_error(f"{exc} (reload: the running servers were kept)", config=str(self.config_path))
            return ReloadResult(error=self.config_error)
        self.config_error = None
        new, old = entries(config), self._config
        # A running server whose entry no longer validates runs on as it was (its last good entry);
        # the error is reported (kept_errors: /readyz, the admin) until the entry is fixed or removed.
        broken = {name: entry for name, entry in new.items() if isinstance(entry, ServerConfigError)}
        self.kept_errors = {name: str(error) for name, error in broken.items() if runnable(old.get(name))}
        for name in self.kept_errors:
            new[name] = old[name]
        self._config = new
        for name in old.keys() - new.keys():
            self._retire(name)
            self._statuses.pop(name, None)
            self._logs.pop(name, None)
        changed = [name for name, entry in new.items() if not same(old.get(name), entry)]
        log_ignored_keys(new[name] for name in changed)
        for name in changed:
            self._apply(name, new[name])
        self._statuses = {name: self._statuses[name] for name in new}  # the file's order
        self._notify()
        result = ReloadResult.of(old, new, changed, kept=tuple(self.kept_errors.values()))
        logger.info("MCP config reloaded: %s", result.describe(), extra={"config": str(self.config_path)})
        return result

    def _apply(self, name: str, entry: Entry) -> None:
        """Make server `name` run as `entry` says, replacing what runs now."""
        config = runnable(entry)
        if config is not None:
            self._replace(name, config)
            return
        self._retire(name)
        self._statuses[name] = self._initial_status(name, entry)

    def _replace(self, name: str, config: ServerConfig) -> None:
        """Stop the server's supervisor, if any, and start one for `config` once it has ended (its tools
        stay registered meanwhile, calls saying it is starting; its resource subscriptions go over)."""
        old = self._supervisors.pop(name, None)
        previous = self._tasks.pop(name, None)
        if old is not None:
            old.stop()
        if previous is not None:
            self._retired.add(previous)
            previous.add_done_callback(self._retired.discard)
        self._statuses[name] = ServerStatus(name, config.type, "starting")
        self._spawn(config, after=previous)
        if isinstance(old, ServerSupervisor) and isinstance(new := self._supervisors[name], ServerSupervisor):
            new.subscribed = set(old.subscribed)  # made again on its session
        self._notify()

    def _retire(self, name: str) -> None:
        """Stop the server (if it runs) and withdraw its tools."""
        supervisor = self._supervisors.pop(name, None)
        task = self._tasks.pop(name, None)
        if supervisor is not None:
            supervisor.stop()
        if task is not None:
            self._retired.add(task)
            task.add_done_callback(self._retired.discard)
        self._tools.withdraw(name)
        self.registry.remove_server(name, HostedServer(self, name))

    async def _watch_files(self, watch: FileWatch, restarts: RestartRequests | None) -> None:
        while True:
            await asyncio.sleep(self.reload_poll)
            try:
                if watch.changed():
                    await self._reload()
                for request_id, servers in restarts.new() if restarts else []:
                    if request_id not in self._own_requests:
                        await self._restart_servers(servers)
            except Exception as exc:  # noqa: BLE001 - the next change is watched for all the same
                admin_logger.add_exception(exc, "McpHost.ReloadFailed", config=str(self.config_path))

    # --- status -------------------------------------------------------------------------------

    def status(self) -> list[ServerStatus]:  # one snapshot per configured server, in config order
        return list(self._statuses.values())

    def _status_changed(self, status: ServerStatus) -> None:
        previous = self._statuses.get(status.name)
        self._statuses[status.name] = status
        if previous is None or previous.state != status.state:
            pid, extra = f" (pid {status.pid})" if status.pid else "", {"server": status.name, "state": status.state}
            logger.info('MCP server "%s": %s%s', status.name, status.describe(), pid, extra=extra)
        self._notify()

    def _notify(self) -> None:
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

    def starting(self, server: str) -> bool:
        return any(s.name == server and s.state == "starting" for s in self.status())

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

    # --- requests -----------------------------------------------------------------------------

    def server_config(self, server: str) -> ServerConfig | None:  # None: it does not run here
        return runner.config if (runner := self._supervisors.get(server)) is not None else None

    async def call_tool(
        self,
        server: str,
        tool: str,
        name: str,
        arguments: dict[str, Any],
        context: CallContext,
        *,
        on_progress: Progress | None = None,
    ) -> InvokeResult:
        """Call `server`'s tool `tool` (`name`: the registry's) from any loop, with the call's
        `context` (a server that acts as each user serves it over `context.user_id`'s connection)."""
        try:
            runner = self._supervisors.get(server)
            if runner is None:  # removed from the config (its tools are being withdrawn)
                return InvokeResult.from_error(f'MCP server "{server}" is unavailable: not configured any more')
            return await self._bridge(runner.call_tool(tool, name, arguments, context, on_progress))
        except HostStopped:
            return InvokeResult.from_error(f'MCP server "{server}" is unavailable: stopped')

    def server_of(self, uri: str, allowed: Iterable[str] | None = None) -> str | None:
        """The configured server (among `allowed`, if given) that lists `uri` or a template it fits."""
        names = set(allowed) if allowed is not None else None
        for status in self.status():
            if names is not None and status.name not in names:
                continue
            if any(resource.matches(uri) for resource in status.resources):
                return status.name
        return None

    async def read_resource(
        self, uri: str, allowed: Iterable[str] | None = None, *, user_id: int | None
    ) -> InvokeResult:
        """`resources/read` of `uri` on the server that lists it, from any event loop; only URIs of
        configured servers are read (any other is refused, so a model cannot make Aptix fetch URLs).
        A server that acts as each user reads it over `user_id`'s own connection."""
        server = self.server_of(uri, allowed)
        if server is None:
            return InvokeResult.from_error(f"No MCP server here offers the resource {uri}.")
        runner = self._supervisors.get(server)
        if runner is None:
            return InvokeResult.from_error(f'MCP server "{server}" is unavailable: not configured any more')
        if isinstance(runner, UserPool):
            return await self._bridge_alone(runner.read_resource(uri, user_id=user_id))
        return await self._bridge(runner.read_resource(uri))

    async def read_app(self, server: str, uri: str, *, user_id: int | None) -> AppResource:
        """`server`'s MCP App at `uri` (apps.py), from any loop (a server that acts as each user reads
        it over `user_id`'s connection); NotAnApp saying why it cannot be shown."""
        runner = self._supervisors.get(server)
        if runner is None:
            raise NotAnApp(f'MCP server "{server}" is unavailable: not configured any more')
        local = bool(settings.DEBUG)  # http://localhost origins in an app's CSP while developing
        if isinstance(runner, UserPool):
            return await self._bridge_alone(runner.read_app(uri, user_id=user_id, local=local))
        return await self._bridge(runner.read_app(uri, local=local))

    def app_tool(self, server: str, tool: str) -> types.Tool | None:
        """`server`'s tool `tool` (its own name) if its MCP Apps may call it (apps.py visibility)."""
        return self._tools.app_tool(server, tool)

    async def subscribe_resource(self, server: str, uri: str) -> bool:
        """Subscribe to `server`'s `uri` (subscriptions.py): whether it took it; False for a per-user one."""
        runner = self._supervisors.get(server)
        return isinstance(runner, ServerSupervisor) and await self._bridge(runner.subscribe_resource(uri))

    def prompts(self) -> list[dict[str, Any]]:
        """Every running server's prompts, in `mcp.json` order, as `PromptInfo.as_json`."""
        return [p.as_json(s.name) for s in self.status() if s.state == "ready" for p in s.prompts]

    def _prompt(self, server: str, name: str) -> PromptInfo:
        ready = [s for s in self.status() if s.name == server and s.state == "ready"]
        if prompt := next((p for s in ready for p in s.prompts if p.name == name), None):
            return prompt
        raise not_offered(server, name)

    async def get_prompt(self, server: str, name: str, arguments: Any, *, user_id: int | None) -> RenderedPrompt:
        """`prompts/get` of a prompt the server lists, from any event loop, for `user_id` (whose own
        connection a per-user server uses). Raises PromptRefused."""
        prompt = self._prompt(server, name)
        cleaned = clean_arguments(prompt, arguments)
        runner = self._supervisors.get(server)
        if runner is None:
            raise PromptRefused(404, f'MCP server "{server}" is not configured any more.', "server")
        return rendered(server, prompt, await self._bridge_alone(runner.get_prompt(name, cleaned, user_id=user_id)))

    async def complete(self, server: str, request: CompletionRequest, *, user_id: int | None) -> Suggestions:
        """`completion/complete` of a prompt's or template's argument (completion.py); PromptRefused."""
        status = next((s for s in self.status() if s.name == server and s.state == "ready"), None)
        if status is None or (runner := self._supervisors.get(server)) is None:
            raise PromptRefused(404, f'No MCP server "{server}" is running here.', "server")
        check_target(request, status.prompts, status.resources, server)
        if status.handshake is not None and "completions" not in status.handshake.server_capabilities:
            return NONE  # the server offers none (a per-user pool's status has no handshake: it asks)
        return await self._bridge_alone(runner.complete(request, user_id=user_id))

    async def _bridge(self, coro: Coroutine) -> Any:
        """Run `coro` on the host loop and await it from the caller's loop."""
        if self._loop is None or self._stopped:
            coro.close()
            raise HostStopped()
        return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(coro, self._loop))

    async def _bridge_alone(self, coro: Coroutine) -> Any:
        """`_bridge` in an empty context, for a call a web request makes: the request's context
        (asgiref's thread-sensitive executor, on the request's thread) must not follow it onto the
        host loop, where a per-user server reads the user's credentials with sync_to_async and would
        wait for that thread, which waits for the call. The user goes as an argument instead."""
        return await asyncio.create_task(self._bridge(coro), context=contextvars.Context())

    def logs(self, server: str) -> ServerLog | None:
        """The last lines of the server's MCP log messages and stderr (None: it has not run here)."""
        return self._logs.get(server)


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
            var = Path(settings.VAR_DIR)
            _host = McpHost(
                settings.APTIX_MCP_CONFIG,
                reload_file=var / REQUEST_FILE,
                restart_file=var / RESTART_FILE,
                reload_poll=RELOAD_POLL,
            )
            _host.start()
            atexit.register(_host.stop)
    return _host


def mcp_host() -> McpHost | None:
    """This process's MCP host (None when it does not run here): reload, restart, logs."""
    return _host


def mcp_status() -> list[ServerStatus]:
    """The status of this process's MCP servers (empty when the host is not running here)."""
    return _host.status() if _host is not None else []


def mcp_kept_errors() -> list[str]:
    """Entries changed into broken ones whose servers run on as before (reported until fixed)."""
    return list(_host.kept_errors.values()) if _host is not None else []


def mcp_config_error() -> str | None:
    """Why this process's host could not use its config file at all (not JSON, no "mcpServers"
    object, missing), or None. Servers with a broken entry show their error in `mcp_status()`."""
    return _host.config_error if _host is not None else None
