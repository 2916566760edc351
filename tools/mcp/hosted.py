"""A server as its host runs it, by name (entry.py ServerPort): what the registry's entries of its tools,
and a call waiting for it to start, ask of it. Read at each use, so a reload's change shows at once.
It reaches the host (host.py McpHost) through ServerHost, what it needs of one."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from tools.base import CallContext, InvokeResult

from .apps import AppResource
from .config import ServerConfig
from .connection import Progress
from .userpool import missing_credentials


class ServerHost(Protocol):
    def server_config(self, server: str) -> ServerConfig | None: ...

    def starting(self, server: str) -> bool: ...

    async def wait_started(self, server: str) -> bool: ...

    async def read_app(self, server: str, uri: str, *, user_id: int | None) -> AppResource: ...

    async def call_tool(
        self,
        server: str,
        tool: str,
        name: str,
        arguments: dict,
        context: CallContext,
        *,
        on_progress: Progress | None = None,
    ) -> InvokeResult: ...


@dataclass(frozen=True)
class HostedServer:
    """A server as `host` runs it, by name (entry.py ServerPort): what its tools' entries, and a
    call waiting for it to start, ask of it. Read at each use, so a reload's change shows at once."""

    host: ServerHost
    name: str

    @property
    def transport(self) -> str | None:
        config = self.host.server_config(self.name)
        return config.type if config is not None else None

    @property
    def per_user(self) -> bool:
        config = self.host.server_config(self.name)
        return config is not None and config.per_user

    def starting(self) -> bool:
        return self.host.starting(self.name)

    async def wait_ready(self) -> bool:
        return await self.host.wait_started(self.name)

    def missing_credentials(self, user_id: int) -> tuple[str, ...]:
        config = self.host.server_config(self.name)
        return missing_credentials(config, user_id) if config is not None and config.per_user else ()

    @property
    def apps(self) -> bool:
        config = self.host.server_config(self.name)
        return config is not None and config.apps

    async def read_app(self, uri: str, user_id: int | None) -> AppResource:
        return await self.host.read_app(self.name, uri, user_id=user_id)

    async def call_tool(
        self, tool: str, name: str, arguments: dict, context: CallContext, on_progress: Progress | None
    ) -> InvokeResult:
        return await self.host.call_tool(self.name, tool, name, arguments, context, on_progress=on_progress)
