"""Sessions for the clients a stateless server cannot ask mid-call: on the handshake-era protocol
(2025-11-25), a client that declares elicitation in its `initialize` is given a session
(`Mcp-Session-Id`, the SDK's stateful session manager, SSE answers) so that a turn waiting for its
user can send it `elicitation/create` on the call's own stream and take the answer (server.py
`_asked_in_call`). Every other request stays stateless, answerable by any process.

A session lives in the memory of the process that answered its `initialize` (the SDK ends it after 30
idle minutes): behind a load balancer with several web processes, route `/mcp/` by the
`Mcp-Session-Id` header (sticky sessions); a request with an id this process does not know is 404,
after which the client initializes again, as the protocol says. A session belongs to the token user
who began it: anyone else's request with its id is 404 as well."""

from __future__ import annotations

import json
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from typing import Any

from mcp_types.version import MODERN_PROTOCOL_VERSIONS

SESSION_HEADER = b"mcp-session-id"
BODY_MAX = 4 * 1024 * 1024  # as the SDK's own limit: a larger body is answered 413 by it
OWNERS_MAX = 10_000  # as the SDK's most sessions at once

Message = dict[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]


def session_id(scope: dict[str, Any]) -> str | None:
    for name, value in scope.get("headers", []):
        if name.lower() == SESSION_HEADER:
            return value.decode("latin-1")
    return None


async def buffered(receive: Receive) -> tuple[bytes, Receive]:
    """The request's body (at most BODY_MAX bytes are kept to look at) and a receive that gives the
    whole body again to whoever reads it next."""
    chunks: list[bytes] = []
    messages: list[Message] = []
    size = 0
    while True:
        message = await receive()
        messages.append(message)
        if message["type"] != "http.request":
            break
        size += len(message.get("body", b""))
        if size <= BODY_MAX:
            chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            break

    async def replay() -> Message:
        return messages.pop(0) if messages else await receive()

    return (b"".join(chunks) if size <= BODY_MAX else b""), replay


def wants_session(body: bytes) -> bool:
    """Whether the body is a handshake-era `initialize` from a client that takes elicitation."""
    try:
        request = json.loads(body)
    except ValueError:
        return False
    if not isinstance(request, dict) or request.get("method") != "initialize":
        return False
    params = request.get("params")
    if not isinstance(params, dict) or params.get("protocolVersion") in MODERN_PROTOCOL_VERSIONS:
        return False
    capabilities = params.get("capabilities")
    return isinstance(capabilities, dict) and capabilities.get("elicitation") is not None


class Owners:
    """Which user began each session of this process (the most recent OWNERS_MAX)."""

    def __init__(self) -> None:
        self._owners: OrderedDict[str, Any] = OrderedDict()

    def owns(self, session: str, user_pk: Any) -> bool:
        return session in self._owners and self._owners[session] == user_pk

    def remembering(self, send: Send, user_pk: Any) -> Send:
        """`send`, noting the session id the SDK's answer to an `initialize` gives as `user_pk`'s."""

        async def sending(message: Message) -> None:
            if message["type"] == "http.response.start":
                for name, value in message.get("headers", []):
                    if name.lower() == SESSION_HEADER:
                        self._owners[value.decode("latin-1")] = user_pk
                        while len(self._owners) > OWNERS_MAX:
                            self._owners.popitem(last=False)
            await send(message)

        return sending
