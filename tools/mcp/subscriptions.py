"""Resource subscriptions: Aptix subscribes to the resources attached to messages (agents/run/attached.py
asks McpHost when a turn reads them), on servers that declare `resources.subscribe`: on a
handshake-era protocol (2025-11-25 and before) with `resources/subscribe` and
`notifications/resources/updated`; on 2026-07-28 on the connection's `subscriptions/listen` stream,
whose filter names them (connection.py `watch`: the stream is opened again with the new set). When
the server says one changed, the listener the rest of Aptix set (`set_resource_listener`: agents
marks the attachments "changed since attached") is told; when it answers that no attachment needs
the resource any more, the supervisor unsubscribes. A supervisor
keeps its subscriptions across restarts of its server (they are made again on the new session) and
ends them when it stops."""

from __future__ import annotations

import asyncio
import logging
import warnings
from collections.abc import Callable
from typing import Any

# Nothing of the SDK at import: agents' app config sets the listener in every process (manage.py too).

logger = logging.getLogger("aptix.mcp")

# (server, uri) → whether any attachment still needs the resource (False: unsubscribe). Called in a
# worker thread (it may use the database).
Listener = Callable[[str, str], bool]
_listener: list[Listener] = []


def set_resource_listener(listener: Listener | None) -> Listener | None:
    """The one function told of each `notifications/resources/updated` (None: nobody); the one it
    replaces, for whoever puts it back (a test's own listener must not leave the process without
    agents' listener: a later test's attachment was then never marked)."""
    previous = _listener[0] if _listener else None
    _listener[:] = [listener] if listener is not None else []
    return previous


def can_subscribe(client: Any) -> bool:
    """Whether the server takes `resources/subscribe` on this session."""
    from .tasks import modern

    return _declares_subscribe(client) and not modern(client.protocol_version)


def can_listen_for(client: Any) -> bool:
    """Whether the server takes resource subscriptions on its `subscriptions/listen` stream (2026-07-28)."""
    from .tasks import modern

    return _declares_subscribe(client) and modern(client.protocol_version)


def _declares_subscribe(client: Any) -> bool:
    resources = client.server_capabilities.resources
    return bool(resources is not None and resources.subscribe)


async def subscribe(client: Any, uri: str) -> None:
    from mcp import MCPDeprecationWarning

    with warnings.catch_warnings():  # removed on 2026-07-28, which can_subscribe leaves out
        warnings.simplefilter("ignore", MCPDeprecationWarning)
        await client.subscribe_resource(uri)


async def unsubscribe(client: Any, uri: str) -> None:
    from mcp import MCPDeprecationWarning

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MCPDeprecationWarning)
        await client.unsubscribe_resource(uri)


async def tell_updated(server: str, uri: str) -> bool:
    """Tell the listener that `server`'s `uri` changed; whether it is still needed (True without a
    listener: nothing here decides it is not)."""
    if not _listener:
        return True
    try:
        return bool(await asyncio.to_thread(_listener[0], server, uri))
    except Exception:
        logger.exception('MCP server "%s": the change of %s could not be recorded', server, uri)
        return True
