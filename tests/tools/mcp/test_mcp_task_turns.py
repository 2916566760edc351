"""MCP tasks in a turn: a call its server runs as a task shows the task's status on its card
(`tool.task` events, live and on a reloaded page), stores what a resume needs while it runs and
nothing once it has its result, Stop sends `tasks/cancel`, and a turn whose process died mid-task is
run again by the next sweep, following the task. A real server (task_server.py)."""

from __future__ import annotations

import asyncio
import json
import sys
from datetime import timedelta
from pathlib import Path

import pytest
from asgiref.sync import sync_to_async
from django.utils import timezone

from agents.models import Turn
from agents.run.reasoner import Reasoner
from agents.run.runners import LocalRunner
from agents.state import PausedState
from agents.turns import turn_start
from agents.web.live import LiveRenderer
from agents.web.timeline import render_turn
from modes.models import AgentMode
from tests.helpers import async_db
from tests.helpers.mcp import START_TIMEOUT, HttpServer, all_settled, write_config
from tools.mcp.host import McpHost
from tools.registry import mcp_registry

pytestmark = pytest.mark.slow  # real subprocesses (servers)

TASK_SERVER = Path(__file__).with_name("task_server.py")


@pytest.fixture(scope="module")
def task_host(tmp_path_factory):
    """The task server in the process-wide registry, for whole turns."""
    config = write_config(
        tmp_path_factory.mktemp("mcp") / "mcp.json", {"t": {"command": sys.executable, "args": [str(TASK_SERVER)]}}
    )
    host = McpHost(config)
    host.start()
    host.wait_until_sync(all_settled, START_TIMEOUT)
    yield host
    host.stop()


@pytest.fixture
async def agent_session(make_session):
    await AgentMode.objects.filter(key="general").aupdate(tool_policy=["*"], approval_policy=["t.*:auto", "h.*:auto"])
    return await make_session(mode="general", execution="agent")


async def events(turn_id: str) -> list:
    return [e async for e in (await Turn.objects.aget(pk=turn_id)).events.order_by("seq")]


def seen() -> list[list[str]]:
    return json.loads(asyncio.run(mcp_registry.get("t__tasks_seen").execute("{}", None)).result)


@async_db
async def test_a_task_shows_its_status_on_the_card_and_leaves_nothing_to_resume(
    task_host, agent_session, model, run_turn
):
    model.reply("", tool_calls=[("t__research", {"topic": "owls", "stages": 3, "stage_seconds": 0.3})])
    model.reply("Owls researched.")
    turn = await run_turn(agent_session, text="research owls")
    assert (turn.status, turn.answer) == (Turn.Status.COMPLETED, "Owls researched.")
    stored = await events(turn.id)
    tasks = [e.payload for e in stored if e.type == "tool.task"]
    [result] = [e.payload for e in stored if e.type == "tool.result"]
    assert result["ok"] and result["result"] == "Report on owls: 3 stages done"
    assert {t["taskId"] for t in tasks} == {tasks[0]["taskId"]} and tasks[0]["id"] == result["id"]
    assert tasks[0]["server"] == "t" and tasks[0]["resumable"] is False  # stdio: it dies with this process
    assert "Stage 2 of 3: reading about owls" in [t["statusMessage"] for t in tasks]
    assert tasks[-1]["status"] == "completed"
    types = [e.type for e in stored]
    assert types.index("tool.called") < types.index("tool.task") < types.index("tool.result")
    assert "task" not in (turn.state or {})  # ended: nothing left to follow

    working = next(e for e in stored if e.type == "tool.task" and e.payload["statusMessage"].startswith("Stage 2"))
    live = await sync_to_async(LiveRenderer(agent_session).render)(turn, "tool.task", working.payload, working.seq)
    assert f'id="tool-{result["id"]}-progress"' in live and "Task working: Stage 2 of 3: reading about owls" in live
    turn.status, turn.answer = Turn.Status.RUNNING, ""  # the page drawn while the task runs
    html = await sync_to_async(render_turn)(turn, [e for e in stored if e.seq <= working.seq])
    assert "Task working: Stage 2 of 3: reading about owls" in html


@async_db
async def test_a_running_task_stores_what_a_resume_needs(task_host, agent_session, model, llm):
    model.reply("", tool_calls=[("t__research", {"topic": "moths", "stages": 20, "stage_seconds": 0.2})])
    model.reply("Done.")
    turn = await sync_to_async(turn_start)(session=agent_session, text="research moths")
    run = asyncio.ensure_future(Reasoner(llm=llm).run(turn.id))
    try:
        async with asyncio.timeout(30):
            while not (state := (await Turn.objects.aget(pk=turn.id)).state or {}).get("task"):
                await asyncio.sleep(0.05)
        task = state["task"]
        assert task["call"]["name"] == "t__research" and task["taskId"] and task["server"] == "t"
        assert task["kind"] == "mcp" and task["rest"] == [] and task["resumes"] == 0
        assert state["messages"][-1]["tool_calls"][0]["function"]["name"] == "t__research"
    finally:
        run.cancel()
        await asyncio.gather(run, return_exceptions=True)


@async_db
async def test_stop_cancels_the_task_at_the_server(task_host, agent_session, model, llm):
    model.reply("", tool_calls=[("t__research", {"topic": "slow", "stages": 100, "stage_seconds": 1})])
    turn = await sync_to_async(turn_start)(session=agent_session, text="research slowly")
    run = asyncio.ensure_future(Reasoner(llm=llm).run(turn.id))
    async with asyncio.timeout(30):
        while not (tasks := [e for e in await events(turn.id) if e.type == "tool.task"]):
            await asyncio.sleep(0.05)
    run.cancel()  # what Stop does to the run (the runner cancels its task)
    await asyncio.gather(run, return_exceptions=True)
    task_id = tasks[0].payload["taskId"]
    assert [task_id, "cancelled"] in await asyncio.to_thread(seen)
    ended = await Turn.objects.aget(pk=turn.id)
    assert ended.status == Turn.Status.CANCELLED
    [result] = [e.payload for e in await events(turn.id) if e.type == "tool.result"]
    assert result["stopped"] is True


@pytest.fixture(scope="module")
def http_task_host(tmp_path_factory):
    """The task server over streamable HTTP as "h", in the process-wide registry."""
    server = HttpServer()
    server.start("--tasks", "--modern")
    host = McpHost(write_config(tmp_path_factory.mktemp("mcp") / "mcp.json", {"h": {"url": server.url}}))
    host.start()
    host.wait_until_sync(all_settled, START_TIMEOUT)
    yield host
    host.stop()
    server.close()


@async_db
async def test_a_restarted_process_follows_the_task_its_dead_run_left(http_task_host, agent_session, model, llm):
    """The turn as a process that died mid-task leaves it (running, its state and task stored, its
    heartbeat old): the next sweep runs it again here, following the task by its id."""
    made = await mcp_registry.get("h__make_task").execute('{"topic": "bats", "stages": 3}', None)
    call = {"id": "call-1", "name": "h__research", "arguments": '{"topic": "bats"}'}
    turn = await sync_to_async(turn_start)(session=agent_session, text="research bats")
    assistant = {"role": "assistant", "content": None, "tool_calls": [_function(call)]}
    state = PausedState(
        messages=[{"role": "system", "content": "You help."}, {"role": "user", "content": "research bats"}, assistant],
        tools=[],
        kinds={"h__research": "mcp"},
        mode="general",
    )
    task = {"call": call, "kind": "mcp", "taskId": made.result, "server": "h", "resumable": True, "rest": []}
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
    [result] = [e.payload for e in await events(turn.id) if e.type == "tool.result"]
    assert result["ok"] and result["result"] == "Report on bats: 3 stages done"
    assert model.calls == 1  # the tool was not called again; the model heard its result


def _function(call: dict) -> dict:
    return {"id": call["id"], "type": "function", "function": {"name": call["name"], "arguments": call["arguments"]}}
