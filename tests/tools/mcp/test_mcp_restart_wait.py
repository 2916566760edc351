"""A call made while its server restarts waits for it, as calls at start-up do, within the tool's call
timeout: after the process died (the supervisor restarts it) and after an operator's restart. Each
fixture server starts only when the test opens its FIFO gate, so the call is made while it is down."""

from __future__ import annotations

import asyncio
import json
import os
import signal

import pytest

from tests.helpers.mcp import START_TIMEOUT, by_name, fixture_entry, ready_host
from tools.registry import ToolRegistry

pytestmark = pytest.mark.slow  # real subprocesses (servers)


@pytest.fixture
def gated(tmp_path):
    """`patient` (30 s call timeout) and `hasty` (1 s), each starting only when its gate opens."""
    gates = {name: tmp_path / f"{name}-gate" for name in ("patient", "hasty")}
    for gate in gates.values():
        os.mkfifo(gate)
    servers = {
        "patient": fixture_entry(env={"FIXTURE_START_GATE": str(gates["patient"])}, timeout=30, initTimeout=60),
        "hasty": fixture_entry(env={"FIXTURE_START_GATE": str(gates["hasty"])}, timeout=1, initTimeout=60),
    }
    registry = ToolRegistry("mcp")
    openers = [_open_soon(gate) for gate in gates.values()]  # the first start of each
    with ready_host(tmp_path, servers, registry=registry) as host:
        yield host, registry, gates
    for opener in openers:
        opener.join(1)


def _open_soon(gate):
    import threading

    thread = threading.Thread(target=gate.write_text, args=("go",), daemon=True)
    thread.start()
    return thread


async def echo(registry, server: str, text: str):
    return await registry.get(f"{server}__echo").execute(json.dumps({"text": text}), None)


async def state_is(host, server: str, state: str):
    statuses = await host.wait_until(lambda s: by_name(s)[server].state == state, START_TIMEOUT)
    return by_name(statuses)[server]


async def test_a_call_while_the_killed_server_restarts_waits_for_it(gated):
    host, registry, gates = gated
    before = by_name(host.status())["patient"]
    os.kill(before.pid, signal.SIGKILL)
    await state_is(host, "patient", "restarting")

    waiting = asyncio.create_task(echo(registry, "patient", "after the restart"))
    done, _ = await asyncio.wait({waiting}, timeout=1.5)  # the restart cannot finish: its gate is shut
    assert not done and by_name(host.status())["patient"].state == "restarting"
    await asyncio.to_thread(gates["patient"].write_text, "go")

    result = await asyncio.wait_for(waiting, START_TIMEOUT)
    assert result.result == "after the restart", result.error_message
    after = by_name(host.status())["patient"]
    assert after.state == "ready" and after.restarts == before.restarts + 1 and after.pid != before.pid


async def test_a_call_during_an_operators_restart_waits_for_the_new_process(gated):
    host, registry, gates = gated
    before = by_name(host.status())["patient"]
    assert await asyncio.to_thread(host.restart, "patient")
    assert by_name(host.status())["patient"].state == "starting"

    waiting = asyncio.create_task(echo(registry, "patient", "new process"))
    done, _ = await asyncio.wait({waiting}, timeout=1.5)
    assert not done
    await asyncio.to_thread(gates["patient"].write_text, "go")

    result = await asyncio.wait_for(waiting, START_TIMEOUT)
    assert result.result == "new process", result.error_message
    assert by_name(host.status())["patient"].pid != before.pid


async def test_the_wait_is_bounded_by_the_call_timeout(gated):
    host, registry, gates = gated
    os.kill(by_name(host.status())["hasty"].pid, signal.SIGKILL)
    await state_is(host, "hasty", "restarting")

    started = asyncio.get_running_loop().time()
    result = await echo(registry, "hasty", "too late")
    waited = asyncio.get_running_loop().time() - started
    assert result.error_message == (
        'MCP server "hasty" is unavailable: restarting (attempt 1); waited 1 s (its call timeout) for it to come back'
    )
    assert 0.9 <= waited < 5
    await asyncio.to_thread(gates["hasty"].write_text, "go")
    await state_is(host, "hasty", "ready")
    assert (await echo(registry, "hasty", "back")).result == "back"
