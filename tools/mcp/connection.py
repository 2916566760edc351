"""One live MCP session with one server: the transport (a child process, a streamable-HTTP endpoint or
a legacy HTTP+SSE one) and
the SDK's `Client` over it, plus the signals the supervisor needs (lost and why, tools changed),
tools/list answers checked tool by tool (listing.py) and pings while the session is idle.

A tool call carries its CallContext (tools/base.py) down to here: who answers the server's
questions, who hears of its task, the answer a paused call is sent again with. The SDK hands its
callbacks (the elicitation callback, the tasks extension's claim) the request alone, so the call in
flight is kept for them: in `_CALL` for the call's own task (a multi round-trip's question, a task
answered to the call run inside it), and in the connection's list of open calls for a request the
server sends from outside the call (a handshake-era `elicitation/create`: the latest call asks)."""

from __future__ import annotations

import asyncio
import logging
import math
import warnings
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import AsyncExitStack, asynccontextmanager, contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from typing import Any

import anyio
import httpx2
import mcp_types as types
from mcp import Client, MCPDeprecationWarning, MCPError
from mcp.client import advertise
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client
from mcp_types import CONNECTION_CLOSED

from tools.base import CallContext

from . import apps
from .config import ServerConfig
from .elicitation import URL_REQUIRED, InputPause, Resume, Round, answer, answer_sampling
from .http import HttpWatch
from .listing import ToolListing, filtered
from .logs import LOG_LEVEL, ServerLog
from .task_session import SessionTaskRequests
from .tasks import (
    Follow,
    TaskFailed,
    TaskFollower,
    TasksExtension,
    TaskState,
    TaskWatch,
    call_legacy,
    modern,
    requires_task,
    server_runs_tasks,
    state_of,
    unrecoverable,
)
from .transport import ChildProcess, stdio_transport

logger = logging.getLogger("aptix.mcp")

PING_TIMEOUT = 10.0  # seconds a ping may take (or the server's call timeout, if shorter)
NOBODY = CallContext.of(None)  # a call nobody made in particular: no questions asked, no task watched

# (progress, total, message): what a `notifications/progress` of a call says
Progress = Callable[[float, float | None, str | None], None]


@dataclass
class OpenCall:
    """One tool call in flight on a connection: its context, its multi round-trip, how a task it
    is answered with is followed, and its time limits (`scope`'s deadline: `timeout` since the
    last sign of life, at most `longest` since it started)."""

    context: CallContext
    round: Round
    follow: Follow
    scope: anyio.CancelScope | None = None
    timeout: float = math.inf
    started: float = 0.0
    longest: float = math.inf
    answered: int = 0  # the server's questions answered so far
    waiting: int = 0  # its questions waiting for their answer now
    question_cut: bool = False  # a question was cut off unanswered (its server went away, or withdrew it)

    @property
    def asking(self) -> bool:
        """Whether a question of the call waits for its answer, or was cut off unanswered."""
        return self.waiting > 0 or self.question_cut

    @contextmanager
    def person_answering(self) -> Iterator[None]:
        """While a person answers the server's question the call's clock stands still: the time
        asked counts neither against its `timeout` nor its `longest`, and `timeout` runs anew from
        the answer. A question cut off meanwhile (the SDK cancels it when the server goes away) is
        noted, so that the call's failure can say so."""
        scope = self.scope
        asked_at = anyio.current_time()
        stands_still = scope is not None and scope.deadline != math.inf  # else no limit now (a task)
        if stands_still:
            assert scope is not None
            scope.deadline = math.inf
        self.waiting += 1
        try:
            yield
            self.answered += 1
        except BaseException as exc:
            if isinstance(exc, anyio.get_cancelled_exc_class()):
                self.question_cut = True
            raise
        finally:
            self.waiting -= 1
            if stands_still:
                assert scope is not None
                now = anyio.current_time()
                self.started += now - asked_at
                scope.deadline = min(now + self.timeout, self.started + self.longest)


# The call the current task is making: set by Connection.call_tool around the call, read by the SDK's
# callbacks that run inside it (`Connection._elicit`, `_record_rounds`, the tasks claim).
_CALL: ContextVar[OpenCall | None] = ContextVar("aptix_mcp_call", default=None)


def _client_info() -> types.Implementation:
    try:
        return types.Implementation(name="aptix", version=version("aptix"))
    except PackageNotFoundError:
        return types.Implementation(name="aptix", version="0")


class StartupError(RuntimeError):
    """The server did not come up; the message says why (for the status and the log)."""


@asynccontextmanager
async def connect(config: ServerConfig, log: ServerLog | None = None) -> AsyncIterator[Connection]:
    """Spawn/connect and complete the MCP handshake within the server's `init_timeout` (its
    `initTimeout`, else its `timeout`); on exit the session is closed and the child stopped.
    Raises StartupError when the server does not come up."""
    connection = Connection(config, log or ServerLog(config.name))
    deadline = config.init_timeout
    # A deadline on a scope around the whole connection, lifted once it is up: a timeout around
    # the handshake alone would exit a cancel scope inside the SDK's still-open task groups.
    with anyio.CancelScope(deadline=anyio.current_time() + deadline) as startup:
        try:
            async with connection.open() as client:
                startup.deadline = math.inf
                connection.client = client
                yield connection
                return
        except Exception as exc:
            if connection.client is not None:
                raise
            raise StartupError(await connection.startup_failure(exc)) from exc
    raise StartupError(f"did not complete the MCP handshake (initialize) within {deadline:g} s")


class Connection:
    """One server's live session. `lost` is set when the server goes away on its own, or the host
    gives up on it (`lost_reason` then says why: no answer to a ping, its HTTP session ended)."""

    def __init__(self, config: ServerConfig, log: ServerLog) -> None:
        self.config = config
        self.log = log
        self.child = ChildProcess(config.name, log.stderr_line) if config.type == "stdio" else None
        self.http = None if self.child else HttpWatch(config.name, config.url, self.give_up)
        self.lost = self.child.stdout_closed if self.child else anyio.Event()
        self.lost_reason: str | None = None
        self.session_gone = False  # the server answered 404 for our session id
        # Set by a server's list_changed notifications (or listen events); the supervisor re-lists.
        self.tools_changed = asyncio.Event()
        self.prompts_changed = asyncio.Event()
        self.resources_changed = asyncio.Event()
        self.resource_updated: Callable[[str], None] | None = None  # the supervisor's, once it is up
        # 2026-07-28: the resources its listen stream subscribes to (`watch`), and an event set (and
        # replaced) when they change, which opens the stream again with the new set.
        self.watched: frozenset[str] = frozenset()
        self.rewatch = asyncio.Event()
        # What a call that lost its server reports; set by the supervisor once the cause is known.
        self.end_message: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        self.client: Client | None = None
        self.listing = ToolListing(self._protocol_version, self.runs_tasks)
        self._task_tools: set[str] = set()  # tools that run only as tasks (called task-augmented)
        self._open: list[OpenCall] = []  # the calls in flight, oldest first
        self._in_flight = 0
        self._idle_since = anyio.current_time()

    def give_up(self, reason: str) -> None:
        """End this connection (the supervisor reconnects): `reason` completes 'MCP server "x" …'."""
        if self.lost_reason is None:
            self.lost_reason = reason
        self.session_gone = self.session_gone or reason.startswith("ended its session")
        self.lost.set()

    def _protocol_version(self) -> str | None:
        try:
            return self.client.protocol_version if self.client is not None else None
        except Exception:  # noqa: BLE001 - before the handshake: the listing check falls back to a default
            return None

    def runs_tasks(self) -> bool:
        """Whether the server may run a tool call as a task on this session (tasks.py)."""
        try:
            client = self.client
            return client is not None and server_runs_tasks(client.server_capabilities, client.protocol_version)
        except Exception:  # noqa: BLE001 - before the handshake: no tasks
            return False

    @property
    def pid(self) -> int | None:
        return self.child.pid if self.child else None

    def _client(self) -> Client:
        """The SDK client; set by `connect()` before the connection is handed out."""
        assert self.client is not None
        return self.client

    @asynccontextmanager
    async def open(self) -> AsyncIterator[Client]:
        async with AsyncExitStack() as stack:
            if self.child:
                transport = stdio_transport(self.config, self.child)
            elif self.config.type == "sse":
                assert self.http is not None  # an HTTP connection
                transport = sse_client(
                    self.config.url, headers=dict(self.config.headers), httpx_client_factory=self.http.factory
                )
            else:
                assert self.http is not None  # an HTTP connection
                http = await stack.enter_async_context(self.http.client(dict(self.config.headers)))
                transport = streamable_http_client(
                    self.config.url, http_client=http, max_sse_event_size=self.config.max_message_bytes
                )
            client = Client(
                filtered(transport, self.listing, *([self.http] if self.http else [])),
                message_handler=self._on_message,
                elicitation_callback=self._elicit,  # declares elicitation (elicitation.py)
                # declares sampling unless the server's entry says "sampling": false (elicitation.py)
                sampling_callback=self._sample if self.config.sampling else None,
                logging_callback=self.log.message,
                log_level=LOG_LEVEL,  # 2026-07-28 servers log only for requests that opt in
                cache=None,
                client_info=_client_info(),
                # 2026-07-28: the tasks extension (tasks.py); MCP Apps where the server's apps are shown (apps.py)
                extensions=[TasksExtension(_follow_of_call)]
                + ([advertise(apps.EXTENSION, apps.CLIENT_SETTINGS)] if self.config.apps else []),
            )
            entered = await stack.enter_async_context(client)
            _record_rounds(entered)
            yield entered

    async def _sample(self, context: Any, params: Any) -> types.CreateMessageResult | types.ErrorData:
        """The server asks to use the user's model: asked of the asker of the call it came in (or of
        the latest call still running that has one), in the open call."""
        call = _CALL.get()
        if call is None:
            asking = [open_call for open_call in self._open if open_call.context.asker is not None]
            call = asking[-1] if asking else None
        if call is None:
            return await answer_sampling(self.config.name, None, params)
        with call.person_answering():
            return await answer_sampling(self.config.name, call.context.asker, params)

    async def _elicit(self, context: Any, params: Any) -> types.ElicitResult | types.ErrorData:
        """The server asks the user (elicitation.py): in the call's own task, that call's asker with
        its round; from outside any call, the asker of the latest call still running that has one."""
        call = _CALL.get()
        if call is not None:
            with call.person_answering():
                return await answer(self.config.name, call.context.asker, call.round, context.request_id, params)
        asking = [open_call for open_call in self._open if open_call.context.asker is not None]
        if not asking:
            return await answer(self.config.name, None, None, context.request_id, params)
        with asking[-1].person_answering():
            return await answer(self.config.name, asking[-1].context.asker, None, context.request_id, params)

    async def startup_failure(self, exc: Exception) -> str:
        leaf = _leaf(exc)
        if self.child and self.child.pid is None and isinstance(leaf, OSError):
            return f"could not be started: {leaf}"
        if self.child and self.child.died:
            code = await self.child.wait_exit(1.0)
            detail = self.child.last_stderr_line()
            return f"exited during start-up (exit code {code})" + (f": {detail}" if detail else "")
        if self.http and self.http.auth_failure:
            return f"could not connect: {self.http.auth_failure}"
        return f"could not connect: {describe_error(leaf)}"

    async def _on_message(self, message) -> None:
        # Handshake-era servers send */list_changed as plain notifications; on 2026-07-28
        # connections they arrive on the listen stream (see `listen_for_changes`).
        if isinstance(message, types.ToolListChangedNotification):
            self.tools_changed.set()
        elif isinstance(message, types.PromptListChangedNotification):
            self.prompts_changed.set()
        elif isinstance(message, types.ResourceListChangedNotification):
            self.resources_changed.set()
        elif isinstance(message, types.ResourceUpdatedNotification) and self.resource_updated is not None:
            self.resource_updated(str(message.params.uri))  # a subscribed resource changed (subscriptions.py)

    async def list_tools(self) -> list[types.Tool]:
        client = self._client()
        tools: list[types.Tool] = []
        cursor: str | None = None
        while True:
            page = await client.list_tools(cursor=cursor)
            tools.extend(page.tools)
            cursor = page.next_cursor
            if cursor is None:
                self._task_tools = {tool.name for tool in tools if requires_task(tool)}
                return tools

    def watch(self, uris: set[str]) -> None:
        """Subscribe to these resources on the listen stream (2026-07-28; subscriptions.py), instead of
        those it has now (called on the host loop)."""
        if frozenset(uris) != self.watched:
            self.watched = frozenset(uris)
            self.rewatch.set()
            self.rewatch = asyncio.Event()

    async def call_tool(
        self, tool: str, arguments: dict, context: CallContext = NOBODY, on_progress: Progress | None = None
    ) -> types.CallToolResult:
        """The call, with its `context`'s asker, task watch and resume. Raises CallTimedOut once
        the server was silent for its `timeout` (each progress notification, also passed to
        `on_progress`, starts that wait again, up to `max_timeout` in all; the server is told to
        cancel), ConnectionLost when the connection ends under the call (SessionGone when an HTTP
        server no longer knows the session: the call did not run and may be sent again on a new
        one), and MCPError for an error answer (its message names a 401/403 and what to check)."""
        client = self._client()
        timeout, longest = self.config.timeout, self.config.max_timeout
        started = anyio.current_time()
        self._in_flight += 1
        try:
            with anyio.CancelScope(deadline=started + min(timeout, longest)) as scope:
                progressed = False

                async def reported(progress: float, total: float | None, message: str | None) -> None:
                    nonlocal progressed
                    progressed = True
                    scope.deadline = min(anyio.current_time() + timeout, call.started + longest)
                    if on_progress is not None:
                        on_progress(progress, total, message)

                async def follow(state: TaskState) -> types.CallToolResult:
                    # A task runs as long as the server works on it: each poll is bounded, not the task.
                    scope.deadline = math.inf
                    follower = TaskFollower(
                        client.session,
                        version=client.protocol_version,
                        timeout=timeout,
                        watch=context.watch,
                        session_id=self._session_id(),
                    )
                    return await follower.follow(state)

                call = OpenCall(context, Round(http=self.child is None), follow, scope, timeout, started, longest)
                current = _CALL.set(call)  # this call's task and what it starts
                self._open.append(call)
                try:
                    return await self._send_call(client, tool, arguments, reported, call)
                finally:
                    self._open.remove(call)
                    _CALL.reset(current)
            # Only the deadline ends the scope without a result.
            since = " since its question was answered (the time the question waited is not counted)"
            if progressed and scope.deadline >= call.started + longest:
                raise CallTimedOut(f'ran for its maximum of {longest:g} s ("maxTimeout") and was stopped')
            raise CallTimedOut(
                f"timed out after {timeout:g} s"
                + (" without progress" if progressed else "")
                + (since if call.answered else "")
            )
        except MCPError as exc:
            if self.session_gone:
                raise SessionGone() from exc
            if exc.code == CONNECTION_CLOSED:
                self.lost.set()
                raise ConnectionLost(asking=call.asking) from exc
            if self.http and self.http.auth_failure:
                raise MCPError(code=exc.code, message=self.http.auth_failure) from exc
            raise
        except (anyio.ClosedResourceError, anyio.BrokenResourceError) as exc:
            self.lost.set()
            raise ConnectionLost(asking=call.asking) from exc
        except BaseExceptionGroup as group:  # the SDK's task group around the question's callback
            if isinstance(pause := _leaf(group), InputPause):
                raise pause from None
            raise
        finally:
            self._in_flight -= 1
            self._idle_since = anyio.current_time()

    async def _send_call(
        self, client: Client, tool: str, arguments: dict, reported, call: OpenCall
    ) -> types.CallToolResult:
        """The call as its server runs it: a task resumed after a restart is followed (the tool is not
        called again); a task-only tool of a 2025-11-25 server is called as a task; any other call
        goes as it is, and a 2026-07-28 server may answer it with a task or a question (tasks.py,
        elicitation.py)."""
        watch = call.context.watch
        if watch is not None and watch.resume:
            return await self._follow_resumed(client, call, watch)
        if tool in self._task_tools and not modern(client.protocol_version) and self.runs_tasks():
            raw = await call_legacy(client.session, tool, arguments, self.config.timeout, reported)
            if isinstance(raw.get("task"), dict):
                return await call.follow(state_of(raw["task"]))
            return types.CallToolResult.model_validate(raw)
        # A 2026-07-28 server may answer with a task (tasks.py: followed with `call.follow`).
        return await client.call_tool(tool, arguments, progress_callback=reported, **_seeds(call.context.resume))

    def _session_id(self) -> str:
        """The MCP session of this connection (HTTP servers' `Mcp-Session-Id`; "" for stdio)."""
        return (self.http.session_id or "") if self.http is not None else ""

    async def _follow_resumed(self, client: Client, call: OpenCall, watch: TaskWatch) -> types.CallToolResult:
        """A task created by a caller that is gone (a resume after its process died), followed by its
        id: in the session it was created in when that is another one (a server may scope task ids to
        their session: task_session.py), else on this connection. A server that does not know the
        task any more answers with an error, said as "its result could not be recovered"."""
        state = TaskState(watch.resume, "working")
        old = watch.resume_session
        try:
            if self.http is None or not old or old == self.http.session_id:
                return await call.follow(state)
            if call.scope is not None:
                call.scope.deadline = math.inf  # a task runs as long as the server works on it
            requests = SessionTaskRequests(self.config.url, dict(self.config.headers), old, client.protocol_version)
            follower = TaskFollower(
                client.session,
                version=client.protocol_version,
                timeout=self.config.timeout,
                watch=watch,
                session_id=old,
                request=requests,
            )
            result = await follower.follow(state)
            await requests.end()  # its caller is gone: end the session it left behind
            return result
        except TaskFailed:
            raise
        except MCPError as exc:
            if exc.code == CONNECTION_CLOSED:
                raise
            raise unrecoverable(watch.resume, exc) from exc

    async def _ping(self) -> None:
        # 2026-07-28 removed `ping` (the SDK warns); such a server answers "method not found", which
        # proves just as well that it is alive, and there is no cheaper request to send instead.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", MCPDeprecationWarning)
            await self._client().send_ping()

    async def keep_alive(self) -> None:
        """Ping the server once it has been idle for `ping_interval` seconds (MCP `ping`); one that
        does not answer in time is given up (a frozen process would otherwise stay "ready" while
        every call waits out its timeout)."""
        interval = self.config.ping_interval
        if not interval:
            return
        patience = min(self.config.timeout, PING_TIMEOUT)
        while True:
            await anyio.sleep(max(0.0, self._idle_since + interval - anyio.current_time()))
            if self._in_flight or anyio.current_time() - self._idle_since < interval:
                self._idle_since = anyio.current_time() if self._in_flight else self._idle_since
                continue
            try:
                with anyio.fail_after(patience):
                    await self._ping()
            except TimeoutError:
                self.give_up(f"did not answer a ping within {patience:g} s")
                return
            except MCPError as exc:  # an error answer is still an answer; a closed connection ends here anyway
                if exc.code == CONNECTION_CLOSED:
                    return
            self._idle_since = anyio.current_time()


class CallTimedOut(TimeoutError):
    """A call ran out of time; the message completes 'MCP tool "x" …'."""


class ConnectionLost(Exception):
    """The server went away during a call; `asking`: while a question of the call waited for its
    answer (the question is gone with the server's request)."""

    def __init__(self, *, asking: bool = False) -> None:
        super().__init__()
        self.asking = asking


class SessionGone(ConnectionLost):
    """The HTTP server answered 404 for the session: the call never ran."""


def _follow_of_call() -> Follow | None:
    """How the call being made in this task follows a task (the tasks claim's; None outside a call)."""
    call = _CALL.get()
    return call.follow if call is not None else None


def _seeds(resume: Resume | None) -> dict[str, Any]:
    """What a call resumed after its question carries: the answer and the server's state."""
    if resume is None or resume.key == URL_REQUIRED:  # the latter: the same call again, as it was
        return {}
    return {"input_responses": resume.input_responses(), "request_state": resume.request_state}


def _record_rounds(client: Client) -> None:
    """Keep the `request_state` of each "input required" answer in the call's Round (elicitation.py):
    the SDK drives the rounds inside `call_tool` and hands its callbacks the request alone, while a
    question that pauses the turn needs the state to be resumed. The SDK sends every round through
    the session's `call_tool`, so this wraps that one method of this connection's session."""
    session = client.session
    send = session.call_tool

    async def recorded(*args: Any, **kwargs: Any) -> Any:
        result = await send(*args, **kwargs)
        if isinstance(result, types.InputRequiredResult) and (call := _CALL.get()) is not None:
            call.round.input_required, call.round.request_state = True, result.request_state
        return result

    session.call_tool = recorded  # type: ignore[method-assign]


def describe_error(exc: BaseException) -> str:
    """'ConnectError: All connection attempts failed' (the leaf of the SDK's exception groups)."""
    leaf = _leaf(exc)
    if isinstance(leaf, httpx2.HTTPStatusError):
        return f"HTTP {leaf.response.status_code} from {leaf.request.url}"
    return f"{type(leaf).__name__}: {leaf}" if str(leaf) else type(leaf).__name__


def _leaf(exc: BaseException) -> BaseException:
    """The first real error inside (nested) exception groups from the SDK's task groups."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc
