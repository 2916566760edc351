"""Servers whose entry has per-user credentials (`${user:NAME}` in headers or env, or `"auth"`):
one connection per (server, user), never shared, so no user's token, session or result ever serves
another. Runs on the MCP host's loop in place of a ServerSupervisor (host.py picks it for such an
entry).

- A call carries its user: its CallContext's `user_id` (tools/base.py; a turn's run: the session's
  user, on a web process or a worker alike); a read or a prompt from a web request, the user given.
- The user's connection is a ServerSupervisor of its own over the entry with that user's values
  filled in (userauth.py); it is opened by the user's first call, reopened when their credentials
  change, and closed once idle for `idle_seconds`.
- The tools: the first user connection publishes the server's tools (and refreshes them as the
  supervisor does). Until someone connects, the server offers none.
- Missing credentials are caught before a call (`connect_needed`, which the turn turns into a
  "connect" pause like an approval); a call that still finds them missing fails saying what to do.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from typing import Any

import anyio
from asgiref.sync import sync_to_async

from tools.base import CallContext, InvokeResult

from .apps import AppResource, NotAnApp
from .completion import CompletionRequest, Suggestions
from .config import ServerConfig
from .connection import Progress
from .logs import ServerLog
from .prompts import PromptRefused
from .status import ServerStatus
from .supervisor import Publish, Published, ServerSupervisor
from .userauth import MissingUserSecrets, fill_user_values

IDLE_SECONDS = 300.0  # a user's connection unused this long is closed
SWEEP_EVERY = 15.0
Credentials = Callable[[str, int], Awaitable[dict[str, str]]]  # (server, user id) -> named secrets
Candidates = Callable[[str], Awaitable[list[int]]]  # server -> users who saved credentials, latest first
DISCOVERY_TRIES = 3  # users tried per sweep to learn the tools from


async def stored_secrets(server: str, user_id: int) -> dict[str, str]:
    from connections.store import secrets_get

    return await sync_to_async(secrets_get)(user_id=user_id, server=server)


def stored_access_token(config: ServerConfig, user_id: int, force_refresh: bool = False) -> str | None:
    """The user's OAuth access token (refreshed as needed; None: they must connect). Off the loop."""
    from django.contrib.auth import get_user_model

    from .oauth import access_token

    user = get_user_model().objects.filter(pk=user_id, is_active=True).first()
    return None if user is None else access_token(config, user, force_refresh=force_refresh)


async def connected_users(server: str) -> list[int]:
    from connections.store import users_with_credentials

    return await sync_to_async(users_with_credentials)(server=server)


@dataclass
class _UserConnection:
    supervisor: ServerSupervisor
    task: asyncio.Task
    fingerprint: str
    last_used: float
    in_flight: int = 0


class NotConnected(LookupError):
    """The user has no (usable) OAuth tokens for the server: they must connect (again)."""


class UserPool:
    """The per-user connections of one server (the host's runner for a per-user entry)."""

    def __init__(
        self,
        config: ServerConfig,
        *,
        publish: Publish,
        on_change: Callable[[ServerStatus], None],
        log: ServerLog | None = None,
        credentials: Credentials = stored_secrets,
        candidates: Candidates = connected_users,
        idle_seconds: float | None = None,
        sweep_every: float | None = None,
    ) -> None:
        self.config = config
        self.log = log or ServerLog(config.name)
        self.idle_seconds = IDLE_SECONDS if idle_seconds is None else idle_seconds
        self.status = ServerStatus(config.name, config.type, "ready")  # serves whoever has connected
        self._publish = publish
        self._on_change = on_change
        self._credentials = credentials
        self._candidates = candidates
        self.sweep_every = SWEEP_EVERY if sweep_every is None else sweep_every
        self._users: dict[int, _UserConnection] = {}
        self._stopped = asyncio.Event()

    @property
    def name(self) -> str:
        return self.config.name

    def users(self) -> list[int]:
        """The users with an open connection (tests, the admin)."""
        return list(self._users)

    def stop(self) -> None:
        self._stopped.set()

    async def run(self) -> None:
        self._on_change(self.status)
        try:
            while not self._stopped.is_set():
                if not self.status.tools:
                    await self._discover()
                with anyio.move_on_after(min(self.sweep_every, self.idle_seconds)):
                    await self._stopped.wait()
                await self._evict_idle()
        finally:
            for user_id in list(self._users):
                await self._close(user_id)
            self.status = replace(self.status, state="stopped", tools=())
            self._on_change(self.status)

    async def _discover(self) -> None:
        """Learn the server's tools (every user's calls need them offered first) over the connection
        of a user who has connected it; until one has, the server offers no tools."""
        try:
            users = await self._candidates(self.name)
        except Exception:  # noqa: BLE001 - the database may be briefly away: the next sweep tries again
            return
        for user_id in users[:DISCOVERY_TRIES]:
            try:
                held = await self._connection_of(user_id)
            except Exception:  # noqa: BLE001 - missing or unreadable credentials: try the next user
                continue
            if await self._ready(held.supervisor):
                return

    async def _evict_idle(self) -> None:
        now = time.monotonic()
        for user_id, held in list(self._users.items()):
            if now - held.last_used >= self.idle_seconds and not held.in_flight:
                await self._close(user_id)

    async def _close(self, user_id: int) -> None:
        held = self._users.pop(user_id, None)
        if held is not None:
            held.supervisor.stop()
            await asyncio.gather(held.task, return_exceptions=True)

    async def call_tool(
        self, tool: str, name: str, arguments: dict, context: CallContext, on_progress: Progress | None = None
    ) -> InvokeResult:
        """The call over its user's (`context.user_id`) own connection."""
        user_id = context.user_id
        if user_id is None:
            return InvokeResult.from_error(f'MCP server "{self.name}" acts as each user: this call has no user.')
        result = await self._call_once(tool, name, arguments, context, on_progress)
        if self.config.auth is not None and _refused(result):
            # The server refused the token (revoked, expired early): refresh it and try once more; a
            # refused refresh has deleted the tokens, so the next call asks the user to connect again.
            token = await asyncio.to_thread(stored_access_token, self.config, user_id, True)
            if token is None:
                return InvokeResult.from_error(self.connect_again())
            result = await self._call_once(tool, name, arguments, context, on_progress)
        return result

    def connect_again(self) -> str:
        return f'MCP server "{self.name}" no longer accepts your connection: connect it again.'

    async def _call_once(
        self, tool: str, name: str, arguments: dict, context: CallContext, on_progress: Progress | None
    ) -> InvokeResult:
        assert context.user_id is not None  # call_tool checked it
        return await self._over_connection(
            context.user_id, lambda supervisor: supervisor.call_tool(tool, name, arguments, context, on_progress)
        )

    async def _over_connection(self, user_id: int, act: Callable[[Any], Awaitable[InvokeResult]]) -> InvokeResult:
        """`act` on the user's own supervisor (opened if need be, counted in flight meanwhile), or the
        error that says why it cannot be."""
        try:
            held = await self._connection_of(user_id)
        except MissingUserSecrets as exc:
            return InvokeResult.from_error(f"{exc}.")
        except NotConnected:
            return InvokeResult.from_error(self.connect_again())
        held.in_flight += 1
        try:
            if not await self._ready(held.supervisor):
                return InvokeResult.from_error(held.supervisor.unavailable_message())
            return await act(held.supervisor)
        finally:
            held.in_flight -= 1
            held.last_used = time.monotonic()

    async def _connection_of(self, user_id: int) -> _UserConnection:
        """The user's supervisor, started (or restarted, when their values changed) as needed."""
        secrets = await self._credentials(self.name, user_id) if self.config.user_variables else {}
        headers = fill_user_values(self.name, self.config.headers, secrets)
        if self.config.auth is not None:
            token = await asyncio.to_thread(stored_access_token, self.config, user_id)
            if token is None:
                raise NotConnected(self.name)
            headers = {**headers, "Authorization": f"Bearer {token}"}
        config = replace(self.config, headers=headers, env=fill_user_values(self.name, self.config.env, secrets))
        fingerprint = hashlib.sha256(
            json.dumps([sorted(config.headers.items()), sorted(config.env.items())]).encode()
        ).hexdigest()
        held = self._users.get(user_id)
        if held is not None and held.fingerprint == fingerprint and not held.task.done():
            held.last_used = time.monotonic()
            return held
        if held is not None:
            await self._close(user_id)
        supervisor = ServerSupervisor(config, publish=self._publish_tools, on_change=self._user_status, log=self.log)
        task = asyncio.create_task(supervisor.run(), name=f"mcp-{self.name}-user-{user_id}")
        held = _UserConnection(supervisor, task, fingerprint, time.monotonic())
        self._users[user_id] = held
        return held

    async def _ready(self, supervisor: ServerSupervisor) -> bool:
        """Wait while the user's connection starts (its handshake and tool listing)."""
        deadline = time.monotonic() + self.config.init_timeout + self.config.timeout
        while supervisor.status.state in ("starting", "restarting") and time.monotonic() < deadline:
            await asyncio.sleep(0.02)
        return supervisor.status.state == "ready"

    def _user_status(self, status: ServerStatus) -> None:
        """A user's connection came up: the server's resources and prompts, as it lists them, are
        the pool's to show (like its tools, learnt from whoever connected; reading or getting one goes
        over the asking user's own connection)."""
        listed = (status.resources, status.prompts)
        if status.state == "ready" and listed != (self.status.resources, self.status.prompts):
            self.status = replace(self.status, resources=status.resources, prompts=status.prompts)
            self._on_change(self.status)

    async def read_resource(self, uri: str, *, user_id: int | None) -> InvokeResult:
        """`resources/read` over the user's own connection (opened if need be)."""
        if user_id is None:
            return InvokeResult.from_error(f'MCP server "{self.name}" acts as each user: this read has no user.')
        return await self._over_connection(user_id, lambda supervisor: supervisor.read_resource(uri))

    async def read_app(self, uri: str, *, user_id: int | None, local: bool = False) -> AppResource:
        """An MCP App's resource (apps.py) over the user's own connection."""
        try:
            return await self._over_user(user_id, lambda supervisor: supervisor.read_app(uri, local=local))
        except PromptRefused as exc:
            raise NotAnApp(str(exc)) from None

    async def get_prompt(self, name: str, arguments: dict[str, str], *, user_id: int | None) -> Any:
        """`prompts/get` over the user's own connection; PromptRefused (409) when they have not
        connected the server (or given its secrets)."""
        return await self._over_user(user_id, lambda supervisor: supervisor.get_prompt(name, arguments))

    async def _over_user(self, user_id: int | None, request: Callable[[ServerSupervisor], Awaitable[Any]]) -> Any:
        """A web request's `request` over the user's own connection; PromptRefused (409) when they
        have not connected the server (or given its secrets)."""
        connect_first = f'MCP server "{self.name}" acts as each user: connect it first.'
        if user_id is None:
            raise PromptRefused(409, connect_first, "server")
        try:
            held = await self._connection_of(user_id)
        except MissingUserSecrets as exc:
            raise PromptRefused(409, f"{exc}.", "server") from None
        except NotConnected:
            raise PromptRefused(409, connect_first, "server") from None
        held.in_flight += 1
        try:
            if not await self._ready(held.supervisor):
                raise PromptRefused(502, held.supervisor.unavailable_message(), "server")
            return await request(held.supervisor)
        finally:
            held.in_flight -= 1
            held.last_used = time.monotonic()

    async def complete(self, request: CompletionRequest, *, user_id: int | None) -> Suggestions:
        """`completion/complete` over the user's own connection (refused like get_prompt)."""
        return await self._over_user(user_id, lambda supervisor: supervisor.complete(request))

    def _publish_tools(self, server: str, tools: list) -> Published:
        published = self._publish(server, tools)
        self.status = replace(self.status, tools=published.names, dropped=published.dropped, renamed=published.renamed)
        self._on_change(self.status)
        return published


def make_runner(
    config: ServerConfig, *, publish: Publish, on_change: Callable[[ServerStatus], None], log: ServerLog
) -> ServerSupervisor | UserPool:
    """What the host runs for `config`: a UserPool for a per-user entry, else one ServerSupervisor."""
    runner = UserPool if config.per_user else ServerSupervisor
    return runner(config, publish=publish, on_change=on_change, log=log)


def _refused(result: InvokeResult) -> bool:
    """Whether the server refused the call's credentials (HTTP 401, http.py's message)."""
    return not result.successful and "HTTP 401" in (result.error_message or "")


def missing_credentials(config: ServerConfig, user_id: int) -> tuple[str, ...]:
    """What `user_id` has not given `config`'s server: named secrets, and "connection" for an OAuth
    server they have not connected (database access: call it off the event loop)."""
    from connections.store import has_tokens, secret_names

    missing = set(config.user_variables) - secret_names(user_id=user_id, server=config.name)
    if config.auth is not None and not has_tokens(user_id=user_id, server=config.name):
        missing.add("connection")
    return tuple(sorted(missing))
