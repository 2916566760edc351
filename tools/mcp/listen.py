"""A 2026-07-28 connection's `subscriptions/listen` stream: the server's tool-, prompt- and resource-list
changes (those its capabilities say it sends) and the changes of the resources Aptix subscribes to
(subscriptions.py: the connection's `watched`, set by `Connection.watch`). Handshake-era servers send
the same as plain notifications (connection.py `_on_message`)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from typing import Any

import anyio
import mcp_types as types
from mcp import MCPError
from mcp.client.subscriptions import ListenNotSupportedError, SubscriptionLost
from mcp.shared.subscriptions import PromptsListChanged, ResourcesListChanged, ResourceUpdated, ToolsListChanged
from mcp_types import CONNECTION_CLOSED

from .connection import Connection
from .subscriptions import can_listen_for

logger = logging.getLogger("aptix.mcp")

LISTEN_BACKOFF_FIRST, LISTEN_BACKOFF_MAX = 0.5, 30.0  # seconds before a lost listen stream is opened again
# A server's answers refusing `subscriptions/listen` itself: not asked again on that connection.
LISTEN_REFUSED = frozenset({types.METHOD_NOT_FOUND, types.INVALID_REQUEST, types.INVALID_PARAMS})


async def listen_for_changes(connection: Connection) -> None:
    """Keep a 2026-07-28 `subscriptions/listen` stream open so the server may send tool-, prompt-
    and resource-list changes (those its capabilities say it sends); returns at once for servers
    that send none. A stream that ends while the connection is up (the server closed it, or
    restarted: a 2026-07-28 HTTP server has no session for us to lose) is opened again, after a
    backoff, and what it may have missed meanwhile is listed again (the SDK replays nothing)."""
    client = connection.client
    assert client is not None  # called once the connection is up
    capabilities = client.server_capabilities
    wanted = {
        kind: bool(declared and declared.list_changed)
        for kind, declared in (
            ("tools", capabilities.tools),
            ("prompts", capabilities.prompts),
            ("resources", capabilities.resources),
        )
    }
    subscribes = can_listen_for(client)  # resource subscriptions, on the same stream
    if not any(wanted.values()) and not subscribes:
        return
    events: dict[type, asyncio.Event] = {ToolsListChanged: connection.tools_changed}
    events[PromptsListChanged], events[ResourcesListChanged] = connection.prompts_changed, connection.resources_changed
    missed = [events[kind] for kind, on in zip(events, wanted.values(), strict=True) if on]
    delay, reopened, warned = LISTEN_BACKOFF_FIRST, False, False
    while not connection.lost.is_set():
        rewatch, watched = connection.rewatch, sorted(connection.watched)
        if not any(wanted.values()) and not watched:  # nothing to listen for until something is attached
            await rewatch.wait()
            continue
        try:
            async with client.listen(
                tools_list_changed=wanted["tools"],
                prompts_list_changed=wanted["prompts"],
                resources_list_changed=wanted["resources"],
                resource_subscriptions=watched,
            ) as subscription:
                if reopened:  # changes made while no stream was open are not sent again
                    for stale in missed:
                        stale.set()
                delay, warned = LISTEN_BACKOFF_FIRST, False
                # Until the subscriptions change: a task of the host's (asyncio) loop cancels the
                # reading then (no task group: it would wrap the stream's own errors in a group).
                with anyio.CancelScope() as reading:
                    watcher = asyncio.ensure_future(_cancel_on(rewatch, reading))
                    try:
                        async for event in subscription:
                            _heard(connection, event, events)
                    finally:
                        watcher.cancel()
        except ListenNotSupportedError:
            return  # handshake-era server: plain notifications (`_on_message`)
        except (SubscriptionLost, anyio.ClosedResourceError):
            pass  # dropped: opened again below, unless the connection is going away
        except Exception as exc:  # noqa: BLE001 - without change events the tools still work
            if _listen_failed(connection, exc, warned):
                return
            warned = True
        if rewatch.is_set():  # the subscriptions changed: the stream again at once, with them
            continue
        await anyio.sleep(delay)
        delay, reopened = min(delay * 2, LISTEN_BACKOFF_MAX), True


def _heard(connection: Connection, event: Any, events: Mapping[type, asyncio.Event]) -> None:
    """A listen stream's event: a subscribed resource changed, or a list did."""
    if isinstance(event, ResourceUpdated):
        if connection.resource_updated is not None:
            connection.resource_updated(event.uri)
    elif (changed := events.get(type(event))) is not None:
        changed.set()


def _listen_failed(connection: Connection, exc: Exception, warned: bool) -> bool:
    """Say why the listen stream failed (once until one is open again); whether to give it up."""
    if isinstance(exc, MCPError) and exc.code == CONNECTION_CLOSED:
        return True
    refused = isinstance(exc, MCPError) and exc.code in LISTEN_REFUSED
    if refused or not warned:
        logger.warning(
            'MCP server "%s": no list change events (%s: %s)%s',
            connection.config.name,
            type(exc).__name__,
            exc,
            "" if refused else "; trying again",
            extra={"server": connection.config.name},
        )
    return refused  # the server answered that it does not serve the stream: no use asking again


async def _cancel_on(event: asyncio.Event, scope: anyio.CancelScope) -> None:
    await event.wait()
    scope.cancel()
