"""Resource subscriptions against a real 2025-11-25 server (the mcp SDK 1.30 one, which declares
`resources.subscribe`): McpHost.subscribe_resource subscribes (the server records it), the server's
`notifications/resources/updated` reaches the resource listener, a listener that answers "no longer
needed" makes the host unsubscribe (the server records that too), and stopping the host ends the
subscriptions. A 2026-07-28 server (tests/tools/mcp/changing_server.py, the mcp SDK 2.x) is subscribed
to on its `subscriptions/listen` stream, and across its restarts."""

from __future__ import annotations

import asyncio
import json
import sys
import threading

import pytest

from tests.helpers.mcp import SERVERS, by_name, guide_entry, ready_host
from tests.helpers.sdk1 import sdk1_entry
from tools.mcp import set_resource_listener
from tools.mcp.host import McpHost
from tools.registry import ToolRegistry

pytestmark = pytest.mark.slow  # real subprocesses (servers)

NOTE = "note://today"


class Listener:
    """The resource listener: records each change it is told of; `needed` is its answer."""

    def __init__(self) -> None:
        self.told: list[tuple[str, str, str]] = []  # (server, uri, the thread it was told on)
        self.needed = True
        self.event = threading.Event()

    def __call__(self, server: str, uri: str) -> bool:
        self.told.append((server, uri, threading.current_thread().name))
        self.event.set()
        return self.needed


@pytest.fixture
def listener():
    listening = Listener()
    previous = set_resource_listener(listening)
    yield listening
    set_resource_listener(previous)  # agents' own (agents/apps.py): later tests in this process need it


def call(registry: ToolRegistry, tool: str, arguments: str = "{}") -> str:
    result = asyncio.run(registry.get(tool).execute(arguments, None))
    assert result.successful, result.error_message
    return result.result


def test_a_subscribed_resources_changes_reach_the_listener_until_it_is_not_needed(tmp_path, listener):
    registry = ToolRegistry("mcp")
    servers = {"sdk1": sdk1_entry(initTimeout=60), "guide": guide_entry()}
    with ready_host(tmp_path, servers, registry=registry) as host:
        statuses = by_name(host.status())
        assert statuses["sdk1"].handshake.server_capabilities["resources"]["subscribe"] is True
        assert statuses["sdk1"].handshake.protocol_version == "2025-11-25"
        assert asyncio.run(host.subscribe_resource("sdk1", NOTE)) is True
        assert call(registry, "sdk1__subscriptions") == NOTE

        call(registry, "sdk1__edit_note", '{"text": "Buy bread."}')
        assert listener.event.wait(10)
        [(server, uri, thread)] = listener.told
        assert (server, uri) == ("sdk1", NOTE) and thread != "aptix-mcp"  # off the host loop (it may use the DB)

        listener.needed, listener.event = False, threading.Event()
        call(registry, "sdk1__edit_note", '{"text": "Buy eggs."}')
        assert listener.event.wait(10)
        # nothing attaches it any more: unsubscribed (the server's list empties once it has handled it)
        deadline = asyncio.run(_until(lambda: call(registry, "sdk1__subscriptions") == ""))
        assert deadline

        assert asyncio.run(host.subscribe_resource("nobody", NOTE)) is False


def test_a_2026_servers_resources_are_subscribed_to_on_its_listen_stream_across_restarts(tmp_path, listener):
    registry = ToolRegistry("mcp")
    changing = {"command": sys.executable, "args": [str(SERVERS / "changing_server.py")]}
    first = "changing://first"
    with ready_host(tmp_path, {"changing": changing}, registry=registry) as host:
        assert by_name(host.status())["changing"].handshake.protocol_version == "2026-07-28"
        assert asyncio.run(host.subscribe_resource("changing", first)) is True
        # The stream is opened again with the resource in its filter: a change is told once it is there.
        assert asyncio.run(_until(lambda: _touched(registry, first, listener)))
        assert listener.told[-1][:2] == ("changing", first)
        # Only what is subscribed is told: a change of another resource, sent first on the same ordered
        # stream, would have been told before this one.
        listener.told.clear()
        call(registry, "changing__touch", '{"uri": "changing://other"}')
        assert _touched(registry, first, listener, wait=10)
        assert {uri for _, uri, _ in listener.told} == {first}  # (an earlier touch of it may arrive late too)

        assert host.restart("changing")
        host.wait_until_sync(lambda s: s[0].state == "ready" and s[0].restarts == 0, 60)
        listener.event = threading.Event()
        assert asyncio.run(_until(lambda: _touched(registry, first, listener)))  # subscribed again on the new session

        listener.needed, listener.event = False, threading.Event()
        assert _touched(registry, first, listener, wait=10)  # answered "not needed": unsubscribed
        assert asyncio.run(_until(lambda: not host._supervisors["changing"].subscribed))


def _touched(registry: ToolRegistry, uri: str, listener: Listener, wait: float = 0.5) -> bool:
    """Say `uri` changed; whether the listener was told within `wait` seconds."""
    listener.event.clear()
    call(registry, "changing__touch", json.dumps({"uri": uri}))
    return listener.event.wait(wait)


def test_a_subscription_is_made_again_when_the_server_restarts(tmp_path, listener):
    registry = ToolRegistry("mcp")
    with ready_host(tmp_path, {"sdk1": sdk1_entry(initTimeout=60)}, registry=registry) as host:
        assert asyncio.run(host.subscribe_resource("sdk1", NOTE)) is True
        before = call(registry, "sdk1__pid")
        assert host.restart("sdk1")
        host.wait_until_sync(lambda s: s[0].state == "ready" and s[0].restarts == 0 and s[0].pid != int(before), 60)
        assert call(registry, "sdk1__pid") != before  # a new process, which knows nothing of the old one's
        assert call(registry, "sdk1__subscriptions") == NOTE
        call(registry, "sdk1__edit_note", '{"text": "Call Ada."}')
        assert listener.event.wait(10) and listener.told[-1][:2] == ("sdk1", NOTE)


def test_stopping_the_host_ends_its_subscriptions(tmp_path, listener):
    registry = ToolRegistry("mcp")
    with ready_host(tmp_path, {"sdk1": sdk1_entry(initTimeout=60)}, registry=registry) as host:
        assert asyncio.run(host.subscribe_resource("sdk1", NOTE)) is True
        supervisor = host._supervisors["sdk1"]
        assert supervisor.subscribed == {NOTE}
        stopping: McpHost = host
    # ready_host stopped it: the supervisor unsubscribed first
    assert stopping._supervisors["sdk1"].subscribed == set()


async def _until(condition, timeout: float = 10.0) -> bool:
    """Whether `condition()` (a server request: it answers in its own time) holds within `timeout`."""
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while loop.time() < end:
        if await asyncio.to_thread(condition):
            return True
        await asyncio.sleep(0.05)
    return False


def test_a_listener_set_answers_the_one_it_replaces_to_be_put_back():
    """The fixture above put None back, which left agents' listener (agents/apps.py) unset for the rest
    of the process: an attachment in a later test of the same xdist worker was never marked."""
    mine = Listener()
    previous = set_resource_listener(mine)
    assert previous is not None and previous.__name__ == "resource_changed"
    assert set_resource_listener(previous) is mine
