"""Each call the MCP server or the A2A agent serves is served as Django serves a request: its sync
work on a thread of its own (a ThreadSensitiveContext), and that thread's database connection handed
back when it ends — even when it ends cancelled.

A cancelled call (a client's cancel, a closed stream, the SDK's task group cancelled) ran its clean-up
`await` inside a scope still being cancelled: the close never ran, the thread ended holding its
pooled connection, and the pool was one connection smaller for the rest of the process (a test
process ran out of them: "couldn't get a connection after 30.00 sec" in a later test). The close is
shielded now, from anyio's cancel scopes (the SDKs' task groups) and from asyncio's task.cancel
(Daphne's, on a client's disconnect): tests/interop/test_requests.py."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
from asgiref.sync import ThreadSensitiveContext, sync_to_async
from django.db import close_old_connections


@asynccontextmanager
async def served_as_a_request() -> AsyncIterator[None]:
    async with ThreadSensitiveContext():
        try:
            yield
        finally:
            with anyio.CancelScope(shield=True):
                await asyncio.shield(sync_to_async(close_old_connections)())


async def connection_given_back() -> None:
    """Hand the request thread's connection back before a call that may take minutes (a turn, an SSE
    stream held open): the calls' own work takes one again for each query, and a request must not keep
    one of the process's few pooled connections while it waits (the GET stream of a 2025-11-25
    session held one for the session's life)."""
    await sync_to_async(close_old_connections)()
