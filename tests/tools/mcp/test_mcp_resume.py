"""A call approved after a restart, while its MCP server is still starting: the call waits for the
server (the tool card says so) instead of failing with "unavailable" — the server's tools are not
published until it is up. The fixture server is held at start-up by a FIFO until the test opens it,
so the call is certainly waiting when the server comes up."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path

import pytest
from asgiref.sync import sync_to_async
from channels.layers import get_channel_layer

from agents.approvals import UserDecision, approval_decide
from agents.events import message_events, session_group
from agents.models import Turn
from agents.run.reasoner import Reasoner
from modes.models import AgentMode
from tests.helpers import async_db
from tools.mcp.host import McpHost
from tools.registry import mcp_registry

pytestmark = [pytest.mark.slow, async_db]

FIXTURE = Path(__file__).with_name("mcp_fixture_server.py")
READY_TIMEOUT = 60
EVENT_TIMEOUT = 30


def write_config(path: Path, env: dict[str, str]) -> None:
    server = {"command": sys.executable, "args": [str(FIXTURE)], "env": env, "timeout": 30}
    path.write_text(json.dumps({"mcpServers": {"fixture": server}}))


async def started(host: McpHost) -> dict[str, str]:
    statuses = await host.wait_until(lambda s: all(x.settled for x in s), READY_TIMEOUT)
    return {s.name: s.state for s in statuses}


async def next_event(layer, channel: str, wanted: str) -> dict:
    async with asyncio.timeout(EVENT_TIMEOUT):
        while True:
            for event in message_events(await layer.receive(channel)):
                if event["event"] == wanted:
                    return event


@pytest.fixture
async def everything_policy():
    await AgentMode.objects.filter(key="general").aupdate(tool_policy=["*"])


async def test_an_approved_call_waits_for_its_server_still_starting_after_a_restart(
    tmp_path, make_session, run_turn, model, llm, alice, everything_policy
):
    config = tmp_path / "mcp.json"
    write_config(config, {})
    before = McpHost(config)
    before.start()
    try:
        assert await started(before) == {"fixture": "ready"}
        session = await make_session(execution="agent")
        asked = model.reply("", tool_calls=[("fixture__noop", {})])  # not read-only: it asks
        turn = await run_turn(session, "Do nothing, carefully")
        assert turn.status == Turn.Status.AWAITING_APPROVAL
    finally:
        before.stop()  # Aptix restarts: the server's tools are withdrawn
    assert mcp_registry.get("fixture__noop") is None

    gate = tmp_path / "start-gate"
    os.mkfifo(gate)
    write_config(config, {"FIXTURE_START_GATE": str(gate)})
    after = McpHost(config)
    after.start()
    layer = get_channel_layer()
    channel = await layer.new_channel()
    await layer.group_add(session_group(session.id), channel)
    try:
        assert {s.name: s.state for s in after.status()} == {"fixture": "starting"}
        approved = UserDecision(asked.tool_calls[0].id, True)
        await sync_to_async(approval_decide)(turn=turn, decisions=[approved], user=alice)
        model.reply("Done: nothing happened.")
        resumed = asyncio.create_task(Reasoner(llm=llm).run(turn.id))

        waiting = await next_event(layer, channel, "tool.progress")  # the card: why the call waits
        assert waiting["payload"]["message"] == 'Waiting for the MCP server "fixture" to start'
        assert not resumed.done()
        await asyncio.to_thread(gate.write_text, "go")  # the server may start now
        await resumed
    finally:
        after.stop()
        await layer.group_discard(session_group(session.id), channel)

    turn = await Turn.objects.aget(pk=turn.id)
    assert turn.status == Turn.Status.COMPLETED, turn.error
    results = [e.payload async for e in turn.events.filter(type="tool.result")]
    assert [(r["name"], r["ok"]) for r in results] == [("fixture__noop", True)]
    assert turn.answer == "Done: nothing happened."
