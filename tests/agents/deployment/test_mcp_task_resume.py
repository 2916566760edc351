"""An MCP task outlives the worker that called it: the worker is killed (SIGKILL) while an HTTP server
runs one of the turn's calls as a task; once its lease runs out, another worker takes the turn over
and follows that task by its stored id (the tool is not called again), and the turn completes. A
stdio server dies with the worker, so its task cannot be followed: the turn ends saying so.

Needs Redis and PostgreSQL (`make test` starts both), as the other worker tests."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import pytest
from asgiref.sync import sync_to_async

from agents.models import Turn, TurnEvent
from agents.run.claims import lease
from agents.runner import get_runner
from agents.turns import turn_start
from modes.models import AgentMode
from tests.helpers import async_db
from tests.helpers.mcp import HttpServer
from tests.helpers.worker_process import HEARTBEAT

pytestmark = [pytest.mark.slow, async_db]

TASK_SERVER = Path(__file__).resolve().parents[2] / "tools" / "mcp" / "task_server.py"


@pytest.fixture
def task_http():
    server = HttpServer()
    server.start("--tasks", "--modern")
    yield server
    server.close()


async def with_mcp(worker, tmp_path: Path, servers: dict) -> None:
    """The worker again, now running these MCP servers (a fresh process: SIGKILL, then start)."""
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": servers}))
    worker.env = {**worker.env, "APTIX_MCP_AUTOSTART": "true", "APTIX_MCP_CONFIG": str(config)}
    await ready_after_restart(worker)


async def ready_after_restart(worker) -> None:
    """Restart the worker and wait until its MCP server "t" is up (a turn started sooner is offered
    no MCP tool: the host publishes them once the server answered)."""
    logged = worker.log.stat().st_size if worker.log.exists() else 0
    await worker.restart()
    async with asyncio.timeout(60):
        while 'MCP server \\"t\\": ready' not in worker.log.read_text(errors="replace")[logged:]:
            await asyncio.sleep(0.1)


async def first_task(turn_id: str) -> dict:
    for _ in range(600):
        event = await TurnEvent.objects.filter(turn_id=turn_id, type="tool.task").order_by("seq").afirst()
        if event is not None:
            return event.payload
        await asyncio.sleep(0.1)
    turn = await Turn.objects.aget(pk=turn_id)
    seen = [(e.type, e.payload) async for e in TurnEvent.objects.filter(turn_id=turn_id).order_by("seq")]
    raise AssertionError(f"no task after 60 s: {turn.status} {turn.error} {seen}")


async def until_ended(turn_id: str) -> Turn:
    async with asyncio.timeout(lease().total_seconds() + 60):
        while not (turn := await Turn.objects.aget(pk=turn_id)).is_finished:
            await asyncio.sleep(HEARTBEAT / 5)  # another process ends it: the database is where to look
    return turn


@pytest.fixture
async def research_turn(make_session, redis_layer):
    await AgentMode.objects.filter(key="general").aupdate(tool_policy=["*"], approval_policy=["t.*:auto"])
    session = await make_session(mode="general", execution="agent")

    async def start() -> Turn:
        turn = await sync_to_async(turn_start)(session=session, text="Research owls")
        await get_runner().start(turn.id)
        return turn

    return start


async def test_a_task_of_an_http_server_is_followed_by_the_next_worker(worker, task_http, tmp_path, research_turn):
    await with_mcp(worker, tmp_path, {"t": {"url": task_http.url}})
    worker.reply("", tool_calls=[("t__research", {"topic": "owls", "stages": 12, "stage_seconds": 0.5})])
    worker.reply("The owls are researched.")
    turn = await research_turn()
    started = await first_task(turn.id)
    assert started["resumable"] is True

    await worker.restart()  # SIGKILL mid-task; the new worker's sweep hands the turn on once its lease ran out

    ended = await until_ended(turn.id)
    assert (ended.status, ended.answer) == (Turn.Status.COMPLETED, "The owls are researched."), ended.error
    stored = [e async for e in ended.events.order_by("seq")]
    assert [e.type for e in stored].count("tool.called") == 1
    [result] = [e.payload for e in stored if e.type == "tool.result"]
    assert result["ok"] and result["result"] == "Report on owls: 12 stages done"
    assert {e.payload["taskId"] for e in stored if e.type == "tool.task"} == {started["taskId"]}  # one task
    assert "task" not in (ended.state or {})


async def test_a_task_of_a_stdio_server_ends_the_turn_with_why_when_its_worker_dies(worker, tmp_path, research_turn):
    await with_mcp(worker, tmp_path, {"t": {"command": sys.executable, "args": [str(TASK_SERVER)]}})
    worker.reply("", tool_calls=[("t__research", {"topic": "owls", "stages": 100, "stage_seconds": 1})])
    turn = await research_turn()
    started = await first_task(turn.id)
    assert started["resumable"] is False

    await worker.restart()  # SIGKILL: the stdio server goes with it

    ended = await until_ended(turn.id)
    assert ended.status == Turn.Status.FAILED
    assert 'the MCP server "t" ran t__research as a task' in ended.error
    assert "a stdio server stops with the process that started it, so the task is gone" in ended.error
