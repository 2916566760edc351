"""The A2A agent of a real Aptix process (`manage.py aptix_serve`, Daphne) through the official A2A
client (a2a-sdk) over HTTP, with the built-in offline model and the shipped SQL MCP server over a demo
database of this run: the client reads the public card (and the extended one with its token), asks
Data Analysis "How many orders are there?" and gets the database's numbers, streams a turn's events,
gets `input-required` when the model asks to switch modes, answers it and gets the completed task;
tasks/cancel stops a running turn (a server of its own, on a scripted model that takes its time) and
ends a waiting one; a bad token and another user's task id are refused."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import time
import urllib.request
import uuid

import httpx
import pytest
from a2a.helpers import get_artifact_text
from a2a.types.a2a_pb2 import (
    CancelTaskRequest,
    GetExtendedAgentCardRequest,
    GetTaskRequest,
    Message,
    Part,
    Role,
    SendMessageRequest,
    TaskState,
)
from a2a.utils.errors import TaskNotFoundError
from google.protobuf.struct_pb2 import Struct

from agents.models import AgentSession, Turn
from modes.models import ModeHistory
from tests.browser.live import ROOT, LiveServer, scripted_env
from tests.helpers import async_db
from tests.helpers.interop import a2a_client
from tests.helpers.scripted_model import ScriptedModel, loopback_server
from tools.demo_data import build_demo_database

pytestmark = [pytest.mark.slow, async_db]

DDR_REQUEST = "Write a design decision record for our new caching layer"


MCP_READY_TIMEOUT = 60.0
# The offline model's query for "how many … orders": the orders of each month (agents/llm/offline/data.py).
ORDERS_BY_MONTH = "SELECT strftime('%Y-%m', ordered_at), COUNT(*) FROM orders GROUP BY 1 ORDER BY 1"


@pytest.fixture(scope="module")
def demo_db(tmp_path_factory):
    path = tmp_path_factory.mktemp("a2a") / "demo.sqlite3"
    build_demo_database(path)
    return path


@pytest.fixture(scope="module")
def server(django_db_setup, demo_db, tmp_path_factory):
    """One Daphne for the module, with the offline model and the SQL MCP server over the demo database."""
    config = tmp_path_factory.mktemp("config") / "mcp.json"
    sql = {"command": "python", "args": ["-m", "tools.mcp.sql_server", f"sqlite:///{demo_db}"], "cwd": str(ROOT)}
    config.write_text(json.dumps({"mcpServers": {"sql": sql}}))
    live = LiveServer(
        var_dir=tmp_path_factory.mktemp("live"),
        env={"APTIX_MCP_AUTOSTART": "true", "APTIX_MCP_CONFIG": str(config)},
    ).start()
    try:
        _wait_for_mcp_server(live, "sql")
        yield live
    finally:
        live.stop()


def _wait_for_mcp_server(live: LiveServer, name: str) -> None:
    """The MCP host starts its servers in the background: /readyz says when one is ready."""
    deadline = time.monotonic() + MCP_READY_TIMEOUT
    while time.monotonic() < deadline:
        with urllib.request.urlopen(f"{live.url}/readyz", timeout=5) as response:
            if json.load(response).get("checks", {}).get("mcp", {}).get(name) == "ready":
                return
        time.sleep(0.2)  # polling a state the process shows only when asked
    raise AssertionError(f"MCP server {name} never became ready:\n{live.log_text()[-3000:]}")


def message(text: str, *, task_id: str = "", context_id: str = "", **metadata) -> SendMessageRequest:
    msg = Message(
        message_id=uuid.uuid4().hex,
        role=Role.ROLE_USER,
        parts=[Part(text=text)],
        task_id=task_id,
        context_id=context_id,
    )
    if metadata:
        struct = Struct()
        struct.update(metadata)
        msg.metadata.CopyFrom(struct)
    return SendMessageRequest(message=msg)


async def send(client, request: SendMessageRequest):
    responses = [response async for response in client.send_message(request)]
    assert len(responses) == 1 and responses[0].HasField("task"), responses
    return responses[0].task


async def test_the_card_and_a_message_as_the_tokens_user(server, demo_db, alice, alice_token):
    async with httpx.AsyncClient(base_url=server.url) as http:
        public = (await http.get("/.well-known/agent-card.json")).json()
    assert public["name"] == "Aptix" and public["skills"] == []
    assert public["supportedInterfaces"][0]["url"] == f"{server.url}/a2a/"  # where the card was read

    async with a2a_client(alice_token, server=server.url) as client:
        extended = await client.get_extended_agent_card(GetExtendedAgentCardRequest())
        task = await send(client, message("How many orders are there?", skill="data-analysis"))
    assert {"general", "data-analysis"} <= {skill.id for skill in extended.skills}
    assert task.status.state == TaskState.TASK_STATE_COMPLETED, task.status
    answer = get_artifact_text(task.artifacts[0])
    with sqlite3.connect(demo_db) as db:
        months = db.execute(ORDERS_BY_MONTH).fetchall()
    assert months and all(str(count) in answer for _month, count in months), answer
    turn = await Turn.objects.select_related("session").aget(pk=task.id)
    assert (turn.session.user_id, turn.session.origin) == (alice.id, "via A2A")
    assert (turn.session.mode, turn.execution) == ("data-analysis", "agent")  # the mode's own execution
    called = [e.payload["name"] async for e in turn.events.filter(type="tool.called").order_by("seq")]
    assert "sql__query" in called


async def test_a_streamed_turn_sends_working_the_tool_the_artifact_and_completed(server, alice_token):
    async with a2a_client(alice_token, server=server.url, streaming=True) as client:
        events = [e async for e in client.send_message(message("What modes are there?", execution="agent"))]
    kinds = [event.WhichOneof("payload") for event in events]
    assert kinds[0] == "task" and kinds[-2:] == ["artifact_update", "status_update"], kinds
    notes = [
        event.status_update.status.message.parts[0].text
        for event in events
        if event.HasField("status_update") and event.status_update.status.message.parts
    ]
    assert "Calling agent_list_modes…" in notes
    assert events[-1].status_update.status.state == TaskState.TASK_STATE_COMPLETED
    assert "Data Analysis" in get_artifact_text(events[-2].artifact_update.artifact)


@pytest.mark.parametrize("decision, mode", [("approve", "ddr-authoring"), ("deny", "general")])
async def test_input_required_is_answered_on_the_task(server, alice_token, decision, mode):
    """The offline model proposes DDR Authoring; a typed "2" (not a consented choice) makes it call
    agent_change_mode, which waits for approval: the task is input-required until the client answers."""
    async with a2a_client(alice_token, server=server.url) as client:
        proposal = await send(client, message(DDR_REQUEST, execution="ask"))
        assert "DDR Authoring" in get_artifact_text(proposal.artifacts[0])
        waiting = await send(client, message("2", context_id=proposal.context_id))
        assert waiting.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
        assert "'ddr-authoring'" in waiting.status.message.parts[0].text
        done = await send(client, message(decision, task_id=waiting.id, context_id=waiting.context_id))
    assert done.id == waiting.id and done.status.state == TaskState.TASK_STATE_COMPLETED
    assert (await AgentSession.objects.aget(pk=proposal.context_id)).mode == mode
    assert await ModeHistory.objects.filter(session_id=proposal.context_id).acount() == (decision == "approve")


async def test_cancel_ends_a_waiting_turn_and_other_users_are_refused(server, alice_token, carol_token):
    async with a2a_client(alice_token, server=server.url) as client:
        proposal = await send(client, message(DDR_REQUEST, execution="ask"))
        waiting = await send(client, message("2", context_id=proposal.context_id))
        assert waiting.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
    async with a2a_client(carol_token, server=server.url) as client:
        with pytest.raises(TaskNotFoundError):
            await client.get_task(GetTaskRequest(id=waiting.id))
        with pytest.raises(TaskNotFoundError):
            await client.cancel_task(CancelTaskRequest(id=waiting.id))
    assert (await Turn.objects.aget(pk=waiting.id)).status == Turn.Status.AWAITING_APPROVAL
    async with a2a_client(alice_token, server=server.url) as client:
        cancelled = await client.cancel_task(CancelTaskRequest(id=waiting.id))
    assert cancelled.status.state == TaskState.TASK_STATE_CANCELED
    assert (await Turn.objects.aget(pk=waiting.id)).status == Turn.Status.CANCELLED

    async with httpx.AsyncClient(base_url=server.url, headers={"Authorization": "Bearer apx_wrong"}) as http:
        refused = await http.post("/a2a/", json={"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "x"}})
    assert refused.status_code == 401 and refused.headers["WWW-Authenticate"].startswith("Bearer")


class _Board:
    """What scripted_env reads: where the scripted model is served."""

    def __init__(self, url: str) -> None:
        self.url = url


async def test_cancel_stops_a_running_turn_of_the_live_server(tmp_path, alice_token):
    model = ScriptedModel()
    model.delay(60)  # the turn's model call: still under way when the client cancels
    model.reply("Too late.")
    async with loopback_server(model) as url:
        live = LiveServer(var_dir=tmp_path, env=scripted_env(_Board(url)))  # type: ignore[arg-type]
        await asyncio.to_thread(live.start)
        try:
            request = message("Take your time", execution="ask")
            request.configuration.return_immediately = True
            async with a2a_client(alice_token, server=live.url) as client:
                task = await send(client, request)
                await asyncio.wait_for(model.requested.wait(), 30)
                cancelled = await client.cancel_task(CancelTaskRequest(id=task.id))
        finally:
            await asyncio.to_thread(live.stop)
    assert cancelled.id == task.id and cancelled.status.state == TaskState.TASK_STATE_CANCELED
    turn = await Turn.objects.aget(pk=task.id)
    assert turn.status == Turn.Status.CANCELLED and turn.answer != "Too late."
