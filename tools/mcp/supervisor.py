"""Keeps one MCP server running: start, list and publish its tools, refresh them on
tools/list_changed (and its prompts and resources on theirs), notice its death at once (or its
silence, through pings), restart it with backoff, and serve its tool calls. An HTTP server that
cannot be reached at start-up is retried with backoff too; a stdio server that cannot start is a
configuration problem and stays failed.

Everything here runs on the MCP host's event loop (see host.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from datetime import UTC, datetime

import anyio
import mcp_types as types
from mcp import MCPError

from aptix.logging import admin_logger
from tools.base import CallContext, InvokeResult

from .apps import AppResource, NotAnApp, app_resource
from .completion import CompletionRequest, Suggestions, complete
from .config import ServerConfig
from .connection import (
    CallTimedOut,
    Connection,
    ConnectionLost,
    Progress,
    SessionGone,
    StartupError,
    connect,
    describe_error,
)
from .elicitation import URL_DECLINED, URL_REQUIRED, URL_STILL_REQUIRED, InputPause, url_required
from .handshake import handshake_of
from .listen import listen_for_changes
from .logs import ServerLog
from .prompts import PromptRefused, list_prompts
from .resources import as_blocks, list_resources
from .rich import format_result
from .status import ServerStatus
from .subscriptions import can_listen_for, can_subscribe, subscribe, tell_updated, unsubscribe

__all__ = ["Published", "ServerStatus", "ServerSupervisor", "backoff_delay"]

logger = logging.getLogger("aptix.mcp")

BACKOFF_FIRST = 0.5  # seconds before the first restart; doubles per attempt
BACKOFF_MAX = 30.0
STABLE_AFTER = 30.0  # a server that ran this long before dying starts again from the first delay
END_MESSAGE_WAIT = 10.0  # covers the transport's stop sequence (grace + SIGTERM + SIGKILL)
MAX_APPS_KEPT = 32  # MCP Apps read and kept per server (read_app)
WHILE_ASKING = "while its question waited for an answer"  # a call cut off with its question (connection.py)


@dataclass(frozen=True)
class Published:
    """What the registry now holds for a server: names, tools left out (name, why) and renamings
    (published name, the server's name)."""

    names: tuple[str, ...]
    dropped: tuple[tuple[str, str], ...] = ()
    renamed: tuple[tuple[str, str], ...] = ()


# (server name, its tools) -> what is now published for them
Publish = Callable[[str, list[types.Tool]], Published]


def backoff_delay(attempt: int) -> float:
    return min(BACKOFF_FIRST * 2 ** (attempt - 1), BACKOFF_MAX)


class ServerSupervisor:
    def __init__(
        self,
        config: ServerConfig,
        *,
        publish: Publish,
        on_change: Callable[[ServerStatus], None],
        log: ServerLog | None = None,
    ) -> None:
        self.config = config
        self.log = log or ServerLog(config.name)
        self._stopping = False
        self.status = ServerStatus(config.name, config.type, "starting")
        self._publish = publish
        self._on_change = on_change
        self._connection: Connection | None = None
        self._attempted = asyncio.Event()  # set, and replaced, whenever an attempt to connect ended
        self._renewing = False  # the HTTP session ended and a new one is on its way
        self._attempt = 0  # restart attempts since the server last ran for STABLE_AFTER seconds
        self._scope = anyio.CancelScope()  # construct on the host loop (anyio needs a running loop)
        self.subscribed: set[str] = set()  # resources subscribed to (subscriptions.py), kept across restarts
        self._telling: set[asyncio.Task] = set()  # listeners being told of a change
        self._apps: dict[tuple[str, str, str, bool], AppResource] = {}  # read_app's, per server version

    @property
    def name(self) -> str:
        return self.config.name

    def _update(self, **changes) -> None:
        self.status = replace(self.status, **changes)
        self._on_change(self.status)

    def stop(self) -> None:
        self._stopping = True
        self._scope.cancel()
        self._attempted.set()  # calls waiting for a (re)start stop waiting

    async def run(self) -> None:
        """Start the server, then keep it running until `stop()` (which may come before `run()`)."""
        if self._stopping:
            return
        with self._scope:
            while True:
                try:
                    await self._serve_once()
                except StartupError as exc:
                    self._attempt_ended()
                    if not self._start_failed(str(exc)):
                        return
                except Exception as exc:  # noqa: BLE001 - a bug here must not end the supervision
                    self._attempt_ended()
                    admin_logger.add_exception(_leaf(exc), "McpSupervisor.Failed", server=self.name)
                    self._restarting(describe_error(exc))
                await anyio.sleep(backoff_delay(self._attempt))
        if self._scope.cancelled_caught:
            self._update(state="stopped", tools=(), pid=None, attempt=0)

    def _start_failed(self, error: str) -> bool:
        """Record a failed (re)start; False when it is final (a stdio server that never came up)."""
        if self.status.state not in ("starting", "failed"):
            self._restarting(f"restart failed: {error}")
            return True
        if self.status.state == "starting" or error != self.status.error:
            admin_logger.add_error(f'MCP server "{self.name}" failed to start: {error}', server=self.name)
        if self.config.type == "stdio":
            # A command that exits or cannot run at start-up: a configuration problem retrying will not fix.
            self._update(state="failed", error=error, pid=None)
            return False
        # An HTTP server may simply not be up yet (or be restarting): keep trying, with backoff.
        self._attempt += 1
        self._update(state="failed", error=error, pid=None, attempt=self._attempt)
        return True

    def _restarting(self, error: str) -> None:
        self._attempt += 1
        self._update(
            state="restarting", attempt=self._attempt, restarts=self.status.restarts + 1, error=error, pid=None
        )

    async def _serve_once(self) -> None:
        """Connect, publish the tools and serve until the server goes away on its own."""
        connection = None
        try:
            async with connect(self.config, self.log) as connection:
                await self._start(connection)
                started = time.monotonic()
                try:
                    await self._watch(connection)
                finally:
                    self._renewing = connection.session_gone  # calls meanwhile wait for the new session
                    self._connection = None
                if time.monotonic() - started >= STABLE_AFTER:
                    self._attempt = 0
                # At once: calls now see "restarting" (the exit code is added once the child is reaped).
                self._restarting(connection.lost_reason or "stopped unexpectedly")
            # The connection is closed, so the child has been reaped: its exit code is known.
            self._ended(connection, self._end_message(connection))
        except StartupError:
            raise
        except Exception as exc:
            if connection is None or connection.client is None:
                raise
            if self.status.state == "ready":
                # The SDK's task groups end with the transport's error (an HTTP server that went away).
                self._connection = None
                self._restarting("lost the connection")
                self._ended(connection, f"lost the connection ({describe_error(exc)})")
            elif connection.lost.is_set():
                # Closing a connection already given up: the SDK's tasks may still fail to deliver.
                logger.info('MCP server "%s": %s while closing', self.name, describe_error(exc))
                self._ended(connection, self._end_message(connection))
            else:
                raise
        finally:
            if connection is not None and not connection.end_message.done():
                connection.end_message.set_result(f'MCP server "{self.name}" was stopped')

    def _ended(self, connection: Connection, message: str) -> None:
        admin_logger.add_error(f'MCP server "{self.name}" {message}', server=self.name, pid=connection.pid)
        self._update(error=message)
        again = "starting a new session" if connection.session_gone else "restarting"
        connection.end_message.set_result(f'MCP server "{self.name}" {message}; {again}')

    async def _start(self, connection: Connection) -> None:
        try:
            await self._refresh(connection)
        except (MCPError, TimeoutError) as exc:
            raise StartupError(f"could not list its tools: {exc}") from exc
        resources: tuple = ()
        prompts: tuple = ()
        with anyio.move_on_after(self.config.timeout):  # extra: a slow listing does not hold the tools up
            resources = await list_resources(connection.client)
            prompts = await list_prompts(connection.client)
        connection.resource_updated = self._resource_updated
        for uri in sorted(self.subscribed) if can_subscribe(connection.client) else ():  # made again
            with anyio.move_on_after(self.config.timeout):
                await self._subscribe_on(connection, uri)
        if can_listen_for(connection.client):  # 2026-07-28: on the new connection's listen stream
            connection.watch(self.subscribed)
        self._connection = connection
        self._attempt_ended()
        self._update(
            resources=resources,
            prompts=prompts,
            state="ready",
            pid=connection.pid,
            started_at=datetime.now(UTC),
            attempt=0,
            handshake=handshake_of(connection.client),
        )

    def _attempt_ended(self) -> None:
        """Wake the calls waiting for a new connection: it is up (`_connection`), or it failed."""
        self._renewing = False
        attempted, self._attempted = self._attempted, asyncio.Event()
        attempted.set()

    async def _watch(self, connection: Connection) -> None:
        async with anyio.create_task_group() as tg:
            tg.start_soon(listen_for_changes, connection)
            tg.start_soon(self._refresh_on_change, connection)
            tg.start_soon(self._relist_on_change, connection, "prompts")
            tg.start_soon(self._relist_on_change, connection, "resources")
            tg.start_soon(connection.keep_alive)
            await connection.lost.wait()
            tg.cancel_scope.cancel()

    async def _refresh(self, connection: Connection) -> None:
        with anyio.fail_after(self.config.timeout):
            tools = await connection.list_tools()
        published = self._publish(self.name, tools)
        dropped = tuple(connection.listing.rejected.items()) + published.dropped
        if dropped and dropped != self.status.dropped:
            summary = "; ".join(f"{tool}: {reason}" for tool, reason in dropped)
            admin_logger.add_error(
                f'MCP server "{self.name}": {len(dropped)} of its {len(tools) + len(connection.listing.rejected)} '
                f"tools are not offered: {summary}",
                server=self.name,
            )
        self._update(tools=published.names, dropped=dropped, renamed=published.renamed)

    async def _refresh_on_change(self, connection: Connection) -> None:
        while True:
            await connection.tools_changed.wait()
            connection.tools_changed.clear()
            try:
                await self._refresh(connection)
            except Exception as exc:  # noqa: BLE001 - the previous tool list stays in use
                logger.warning(
                    'MCP server "%s": could not refresh its tools (%s)',
                    self.name,
                    describe_error(exc),
                    extra={"server": self.name},
                )

    async def _relist_on_change(self, connection: Connection, kind: str) -> None:
        """prompts/list_changed or resources/list_changed: list them again (the prompts API, Attach
        and mcp_read_resource read the status)."""
        changed = connection.prompts_changed if kind == "prompts" else connection.resources_changed
        lister = list_prompts if kind == "prompts" else list_resources
        while True:
            await changed.wait()
            changed.clear()
            try:
                with anyio.fail_after(self.config.timeout):
                    listed = await lister(connection.client)  # logs a failing listing itself
            except Exception as exc:  # noqa: BLE001 - too slow: the previous list stays in use
                logger.warning(
                    'MCP server "%s": could not refresh its %s (%s)',
                    self.name,
                    kind,
                    describe_error(exc),
                    extra={"server": self.name},
                )
                continue
            self._update(**{kind: listed})

    @staticmethod
    def _end_message(connection: Connection) -> str:
        if connection.lost_reason:
            return connection.lost_reason
        if connection.child is None:
            return "closed the connection unexpectedly"
        code = connection.child.returncode
        return "stopped unexpectedly" + (f" (exit code {code})" if code is not None else "")

    async def call_tool(
        self, tool: str, name: str, arguments: dict, context: CallContext, on_progress: Progress | None = None
    ) -> InvokeResult:
        """Call `tool` (the server's name for it; `name` is the registry's) on the live session, with
        the call's `context` (its connection asks its asker, tells its watch). A call refused because
        the HTTP session ended never ran: it is sent again on the new session. A call made while the
        server (re)starts waits for it, within the call timeout, as calls at Aptix's start-up do."""
        if (resume := context.resume) is not None and resume.key == URL_REQUIRED and resume.answer.action != "accept":
            url = resume.request_state or "its page"  # a URL question's resume keeps the URL there
            return InvokeResult.from_error(URL_DECLINED.format(name=name, url=url, action=resume.answer.action))
        connection = self._connection
        if connection is None and self._renewing:
            connection = await self._next_connection(None)
        if connection is None and self._coming_back():
            connection = await self._back_within(self.config.timeout)
            if connection is None and self._coming_back():  # not up within the call timeout
                waited = f"waited {self.config.timeout:g} s (its call timeout) for it to come back"
                return InvokeResult.from_error(f"{self.unavailable_message()}; {waited}")
        if connection is None:
            return InvokeResult.from_error(self.unavailable_message())
        try:
            result = await connection.call_tool(tool, arguments, context, on_progress)
        except SessionGone:
            connection = await self._next_connection(connection)
            if connection is None:
                return InvokeResult.from_error(self.unavailable_message())
            return await self._call(connection, tool, name, arguments, context, on_progress=on_progress)
        except Exception as exc:  # noqa: BLE001 - turned into a tool error by _failed
            return await self._failed(connection, exc, name, context)
        return format_result(result, name, keep=context.keep)

    async def _call(
        self,
        connection: Connection,
        tool: str,
        name: str,
        arguments: dict,
        context: CallContext,
        *,
        on_progress: Progress | None,
    ) -> InvokeResult:
        try:
            result = await connection.call_tool(tool, arguments, context, on_progress)
            return format_result(result, name, keep=context.keep)
        except Exception as exc:  # noqa: BLE001 - turned into a tool error by _failed
            return await self._failed(connection, exc, name, context)

    async def _failed(self, connection: Connection, exc: Exception, name: str, context: CallContext) -> InvokeResult:
        if isinstance(exc, InputPause):  # not a failure: the caller pauses for the user's answer
            raise exc
        if isinstance(exc, MCPError) and exc.code == types.URL_ELICITATION_REQUIRED:
            return self._url_required(exc, name, context)
        if isinstance(exc, CallTimedOut):
            return InvokeResult.from_error(f'MCP tool "{name}" {exc}')
        if isinstance(exc, TimeoutError):
            return InvokeResult.from_error(f'MCP tool "{name}" timed out after {self.config.timeout:g} s')
        if isinstance(exc, ConnectionLost):
            message = await self._lost_message(connection)
            return InvokeResult.from_error(while_asking(message) if exc.asking else message)
        if isinstance(exc, MCPError):
            return InvokeResult.from_error(f'MCP tool "{name}" failed: {exc.message}')
        # e.g. a result that breaks the protocol
        admin_logger.add_exception(_leaf(exc), "McpTool.Failed", tool=name, server=self.name)
        return InvokeResult.from_error(f'MCP tool "{name}" failed: {describe_error(exc)}')

    def _url_required(self, exc: MCPError, name: str, context: CallContext) -> InvokeResult:
        """URLElicitationRequired (-32042): a durable caller is asked the error's URL question (the call
        pauses, InputPause; elicitation.py), unless this call is already the retry after it; anyone
        else gets a failure naming the page."""
        request = url_required(self.name, exc.error)
        resume, asker = context.resume, context.asker
        retried = resume is not None and resume.key == URL_REQUIRED
        if request is not None and not retried and asker is not None and asker.durable:
            raise InputPause(request, URL_REQUIRED, request.url)
        if resume is not None and retried:
            url = request.url if request is not None else resume.request_state
            return InvokeResult.from_error(URL_STILL_REQUIRED.format(name=name, url=url, message=exc.message))
        page = f" (visit {request.url}, then call it again)" if request is not None else ""
        return InvokeResult.from_error(f'MCP tool "{name}" failed: {exc.message}{page}')

    def _coming_back(self) -> bool:
        """Whether the server is (re)starting: a connection is on its way, unless it fails."""
        return not self._stopping and self.status.state in ("starting", "restarting")

    async def _back_within(self, timeout: float) -> Connection | None:
        """The connection once the server is up again, waiting through its restart attempts (each
        wakes us) for at most `timeout` seconds; None when it is not up by then or stops coming back."""
        with anyio.move_on_after(timeout):
            while self._connection is None and self._coming_back():
                await self._attempted.wait()
        return self._connection

    async def _next_connection(self, old: Connection | None) -> Connection | None:
        """The connection that replaces `old` (None: the one lost), once the next attempt to connect
        is up; None when that attempt fails or does not end within the start-up timeout."""
        current = self._connection
        if current is None or current is old:
            attempted = self._attempted
            with anyio.move_on_after(self.config.init_timeout + BACKOFF_MAX):
                await attempted.wait()
            current = self._connection
        return current if current is not None and current is not old else None

    async def read_resource(self, uri: str, *, user_id: int | None = None) -> InvokeResult:
        """`resources/read` of `uri` on the live session, as a tool result (text, images, files)
        (`user_id` is for a per-user pool's signature: this connection is everyone's)."""
        connection = self._connection
        if connection is None or connection.client is None:
            return InvokeResult.from_error(self.unavailable_message())
        try:
            with anyio.fail_after(self.config.timeout):
                result = await connection.client.read_resource(uri)
        except TimeoutError:
            took = f"within {self.config.timeout:g} s"
            return InvokeResult.from_error(f'MCP server "{self.name}" did not read {uri} {took}')
        except MCPError as exc:
            return InvokeResult.from_error(f'MCP server "{self.name}" could not read {uri}: {exc.message}')
        blocks = as_blocks(result)
        return format_result(types.CallToolResult(content=list(blocks)), f"{self.name} resource {uri}")

    async def read_app(self, uri: str, *, local: bool = False) -> AppResource:
        """The MCP App at `uri` (apps.py), read once per server version: a restarted server that says
        it is another version is read again. NotAnApp saying why it cannot be shown."""
        connection = self._connection
        if connection is None or connection.client is None:
            raise NotAnApp(self.unavailable_message())
        info = getattr(connection.client, "server_info", None)
        key = (str(getattr(info, "name", "")), str(getattr(info, "version", "")), uri, local)
        if (kept := self._apps.get(key)) is not None:
            return kept
        try:
            with anyio.fail_after(self.config.timeout):
                result = await connection.client.read_resource(uri)
        except TimeoutError:
            raise NotAnApp(f'MCP server "{self.name}" did not read {uri} within {self.config.timeout:g} s') from None
        except MCPError as exc:
            raise NotAnApp(f'MCP server "{self.name}" could not read {uri}: {exc.message}') from None
        app = app_resource(uri, result, local=local)
        if len(self._apps) >= MAX_APPS_KEPT:
            self._apps.clear()
        self._apps[key] = app
        return app

    async def get_prompt(
        self, name: str, arguments: dict[str, str], *, user_id: int | None = None
    ) -> types.GetPromptResult:
        """`prompts/get` on the live session (`user_id` is for a per-user pool's signature: this
        connection is everyone's). Raises PromptRefused with the server's reason."""
        connection = self._connection
        if connection is None or connection.client is None:
            raise PromptRefused(502, self.unavailable_message(), "server")
        try:
            with anyio.fail_after(self.config.timeout):
                return await connection.client.get_prompt(name, arguments)
        except TimeoutError:
            took = f"within {self.config.timeout:g} s"
            raise PromptRefused(502, f'MCP server "{self.name}" did not answer {took}') from None
        except MCPError as exc:  # -32602: the server refused the arguments
            status, field = (400, "arguments") if exc.code == types.INVALID_PARAMS else (502, None)
            raise PromptRefused(status, f'MCP server "{self.name}": {exc.message}', field) from None
        except Exception as exc:  # noqa: BLE001 - e.g. an answer that breaks the protocol: said, not raised on
            raise PromptRefused(502, f'MCP server "{self.name}" failed: {describe_error(exc)}') from None

    async def complete(self, request: CompletionRequest, *, user_id: int | None = None) -> Suggestions:
        """`completion/complete` on the live session (none when the server does not declare
        `completions`; `user_id` is for a per-user pool's signature). Raises PromptRefused (502)."""
        connection = self._connection
        if connection is None or connection.client is None:
            raise PromptRefused(502, self.unavailable_message(), "server")
        try:
            with anyio.fail_after(self.config.timeout):
                return await complete(connection.client, request)
        except TimeoutError:
            raise PromptRefused(
                502, f'MCP server "{self.name}" did not answer within {self.config.timeout:g} s'
            ) from None
        except MCPError as exc:
            status, field = (400, "argument") if exc.code == types.INVALID_PARAMS else (502, None)
            raise PromptRefused(status, f'MCP server "{self.name}": {exc.message}', field) from None
        except Exception as exc:  # noqa: BLE001 - an answer that breaks the protocol: said, not raised on
            raise PromptRefused(502, f'MCP server "{self.name}" failed: {describe_error(exc)}') from None

    async def subscribe_resource(self, uri: str) -> bool:
        """`resources/subscribe` of `uri` (subscriptions.py); whether the server took it (False: it
        does not offer subscriptions on this session, or refused)."""
        connection = self._connection
        if connection is not None and connection.client is not None and can_listen_for(connection.client):
            self.subscribed.add(uri)  # named in its listen stream's filter from now on (2026-07-28)
            connection.watch(self.subscribed)
            return True
        if connection is None or connection.client is None or not can_subscribe(connection.client):
            return False
        if uri in self.subscribed:
            return True
        with anyio.move_on_after(self.config.timeout):
            return await self._subscribe_on(connection, uri)
        return False

    async def _subscribe_on(self, connection: Connection, uri: str) -> bool:
        try:
            await subscribe(connection.client, uri)
        except MCPError as exc:
            logger.info('MCP server "%s" refused the subscription to %s: %s', self.name, uri, exc.message)
            self.subscribed.discard(uri)
            return False
        self.subscribed.add(uri)
        return True

    async def unsubscribe_resource(self, uri: str) -> None:
        """`resources/unsubscribe` of `uri` (nothing when not subscribed; a failure is only logged)."""
        if uri not in self.subscribed:
            return
        self.subscribed.discard(uri)
        connection = self._connection
        if connection is None or connection.client is None:
            return
        if can_listen_for(connection.client):
            connection.watch(self.subscribed)
            return
        try:
            with anyio.fail_after(self.config.timeout):
                await unsubscribe(connection.client, uri)
        except Exception as exc:  # noqa: BLE001 - the session's end ends it anyway
            logger.info('MCP server "%s": unsubscribing from %s failed (%s)', self.name, uri, describe_error(exc))

    async def end_subscriptions(self) -> None:
        """Unsubscribe from everything (Aptix stops)."""
        for uri in sorted(self.subscribed):
            await self.unsubscribe_resource(uri)

    def _resource_updated(self, uri: str) -> None:
        """The server says `uri` changed (the connection's notification handler, on the host loop)."""
        if uri in self.subscribed:
            task = asyncio.get_running_loop().create_task(self._tell_updated(uri))
            self._telling.add(task)
            task.add_done_callback(self._telling.discard)

    async def _tell_updated(self, uri: str) -> None:
        if not await tell_updated(self.name, uri):
            await self.unsubscribe_resource(uri)  # no attachment needs it any more

    def unavailable_message(self) -> str:
        return f'MCP server "{self.name}" is unavailable: {self.status.describe()}'

    async def _lost_message(self, connection: Connection) -> str:
        try:
            return await asyncio.wait_for(asyncio.shield(connection.end_message), END_MESSAGE_WAIT)
        except TimeoutError:
            return f'MCP server "{self.name}" stopped unexpectedly; restarting'


async def end_subscriptions(runners: Iterable[object], timeout: float) -> None:
    """The resource subscriptions of every supervisor among `runners` ended (Aptix stops; a per-user
    pool has none), for at most `timeout` seconds in all."""
    supervisors = [runner for runner in runners if isinstance(runner, ServerSupervisor)]
    ending = asyncio.gather(*(s.end_subscriptions() for s in supervisors), return_exceptions=True)
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(ending, timeout)


def while_asking(message: str) -> str:
    """'MCP server "x" stopped unexpectedly (exit code -9) while its question waited for an answer;
    restarting': the end of a call whose question was waiting for the user when its server went."""
    head, separator, tail = message.rpartition("; ")
    if not separator:
        head, tail = message, ""
    return f"{head} {WHILE_ASKING}" + (f"; {tail}" if tail else "")


def _leaf(exc: BaseException) -> BaseException:
    """The first real error inside (nested) exception groups from the SDK's task groups."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc
