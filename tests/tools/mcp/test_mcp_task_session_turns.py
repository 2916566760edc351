"""Tasks of a server that scopes task ids to their session (the mcp SDK 1.30), in turns: a running
task stores the MCP session it was created in with its id (in the turn's state, not in events), and
a turn whose process died mid-task is run again by the next sweep, which follows the task in that
session and completes the turn with its result."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest
from asgiref.sync import sync_to_async
from django.utils import timezone

from agents.models import Turn, TurnEvent
from agents.run.reasoner import Reasoner
from agents.run.runners import LocalRunner
from agents.state import PausedState
from agents.turns import turn_start
from modes.models import AgentMode
from tests.helpers import async_db
from tests.helpers.mcp import START_TIMEOUT, HttpServer, all_settled, write_config
from tests.helpers.sdk1 import sdk1_http
from tools.mcp.host import McpHost
from tools.registry import mcp_registry

pytestmark = [async_db, pytest.mark.slow]  # real subprocesses (a server on mcp 1.30, a caller that dies)

CALLER = Path(__file__).with_name("task_caller.py")
RESEARCH = {"topic": "bats", "stages": 6, "stage_seconds": 0.5}


@pytest.fixture(scope="module")
def old_tasks(tmp_path_factory):
    """The 1.30 server over streamable HTTP as "old", in the process-wide registry; yields its URL."""
    server = HttpServer()
    server.listener.listen()
    server.process = sdk1_http(server.listener.fileno())
    host = McpHost(write_config(tmp_path_factory.mktemp("mcp") / "mcp.json", {"old": {"url": server.url}}))
    host.start()
    assert [s.state for s in host.wait_until_sync(all_settled, START_TIMEOUT)] == ["ready"]
    yield server.url
    host.stop()
    server.close()


@pytest.fixture
async def agent_session(make_session):
    await AgentMode.objects.filter(key="general").aupdate(tool_policy=["*"], approval_policy=["old.*:auto"])
    return await make_session(mode="general", execution="agent")


def orphaned_task(directory: Path, url: str) -> dict:
    """{"task", "session"} of a research task whose caller process was then killed (SIGKILL)."""
    config = write_config(directory / "caller.json", {"old": {"url": url}})
    caller = subprocess.Popen(
        [sys.executable, str(CALLER), str(config), "old__research", json.dumps(RESEARCH)],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "DEBUG": "false", "SECRET_KEY": os.environ.get("SECRET_KEY", "x")},
    )
    try:
        assert caller.stdout is not None
        line = caller.stdout.readline()
        assert line, "the caller ended without a task"
        return json.loads(line)
    finally:
        caller.kill()
        caller.wait()


async def test_a_running_task_stores_its_session_beside_its_id(old_tasks, agent_session, model, llm):
    model.reply("", tool_calls=[("old__research", {"topic": "moths", "stages": 40, "stage_seconds": 0.2})])
    turn = await sync_to_async(turn_start)(session=agent_session, text="research moths")
    run = asyncio.ensure_future(Reasoner(llm=llm).run(turn.id))
    try:
        async with asyncio.timeout(30):
            while not (state := (await Turn.objects.aget(pk=turn.id)).state or {}).get("task"):
                await asyncio.sleep(0.05)
        task = state["task"]
        assert task["server"] == "old" and task["resumable"] is True and task["session"]
        assert task["taskId"].count(":") == 1  # scoped to the session that created it
        events = [e.payload async for e in TurnEvent.objects.filter(turn_id=turn.id, type="tool.task")]
        assert events and all("session" not in e and task["session"] not in json.dumps(e) for e in events)
    finally:
        run.cancel()
        await asyncio.gather(run, return_exceptions=True)


async def test_a_restarted_process_follows_the_task_in_its_session(old_tasks, agent_session, model, llm, tmp_path):
    orphan = await asyncio.to_thread(orphaned_task, tmp_path, old_tasks)
    call = {"id": "call-1", "name": "old__research", "arguments": json.dumps(RESEARCH)}
    turn = await sync_to_async(turn_start)(session=agent_session, text="research bats")
    function = {"name": call["name"], "arguments": call["arguments"]}
    assistant = {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": call["id"], "type": "function", "function": function}],
    }
    state = PausedState(
        messages=[{"role": "system", "content": "You help."}, {"role": "user", "content": "research bats"}, assistant],
        tools=[],
        kinds={"old__research": "mcp"},
        mode="general",
    )
    task = {
        "call": call,
        "kind": "mcp",
        "taskId": orphan["task"],
        "session": orphan["session"],
        "server": "old",
        "resumable": True,
        "rest": [],
    }
    await Turn.objects.filter(pk=turn.id).aupdate(
        status=Turn.Status.RUNNING,
        state={**state.to_json(), "task": task},
        started_at=timezone.now() - timedelta(minutes=5),
        heartbeat_at=timezone.now() - timedelta(minutes=5),
    )
    model.reply("Bats researched.")
    runner = LocalRunner(mcp=mcp_registry)
    await runner.sweep()
    ended = await runner.wait(turn.id)
    assert (ended.status, ended.answer) == (Turn.Status.COMPLETED, "Bats researched."), ended.error
    [result] = [e.payload async for e in TurnEvent.objects.filter(turn_id=turn.id, type="tool.result")]
    assert result["ok"] and result["result"] == "Report on bats: 6 stages done"
    assert model.calls == 1  # the tool was not called again; the model heard its result
