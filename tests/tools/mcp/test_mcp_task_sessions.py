"""A task of a server that scopes task ids to the session that created them (the mcp SDK 1.30's
default), over streamable HTTP: a caller process dies mid-task (SIGKILL: no `tasks/cancel`, its
session not ended), and another host follows the task by its id in the session it was created in,
the result recovered; without that session the server no longer knows the task, and the call says
its result could not be recovered instead of a bare "Task not found"."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.mcp import START_TIMEOUT, HttpServer, all_settled, by_name, write_config
from tests.helpers.sdk1 import sdk1_http
from tools.base import CallContext
from tools.mcp.host import McpHost
from tools.mcp.tasks import TaskState, TaskWatch
from tools.registry import ToolRegistry

pytestmark = pytest.mark.slow  # real subprocesses (a server on mcp 1.30, a caller that dies)

CALLER = Path(__file__).with_name("task_caller.py")
RESEARCH = {"topic": "owls", "stages": 6, "stage_seconds": 0.5}


@pytest.fixture
def sdk1_server():
    server = HttpServer()
    server.listener.listen()
    server.process = sdk1_http(server.listener.fileno())
    yield server
    server.close()


def orphaned_task(tmp_path: Path, url: str) -> dict:
    """The first state of a research task whose caller process was then killed."""
    config = write_config(tmp_path / "caller.json", {"old": {"url": url}})
    caller = subprocess.Popen(
        [sys.executable, str(CALLER), str(config), "old__research", json.dumps(RESEARCH)],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "DEBUG": "false", "SECRET_KEY": os.environ.get("SECRET_KEY", "x")},
    )
    try:
        assert caller.stdout is not None
        line = caller.stdout.readline()  # blocks until the task's first status (or the caller's end)
        assert line, "the caller ended without a task"
        return json.loads(line)
    finally:
        caller.kill()
        caller.wait()


def resumed(tmp_path: Path, url: str, task: dict, *, session: str) -> tuple[str, list[TaskState], McpHost]:
    registry = ToolRegistry("mcp")
    host = McpHost(write_config(tmp_path / "mcp.json", {"old": {"url": url}}), registry=registry)
    host.start()
    states: list[TaskState] = []
    try:
        assert [s.state for s in host.wait_until_sync(all_settled, START_TIMEOUT)] == ["ready"]
        assert by_name(host.status())["old"].handshake.protocol_version == "2025-11-25"

        async def run() -> str:
            watch = TaskWatch(states.append, resume=task["task"], resume_session=session)
            context = CallContext.of(None, watch=watch)
            result = await registry.get("old__research").execute(json.dumps(RESEARCH), context)
            return result.result if result.successful else f"error: {result.error_message}"

        return asyncio.run(run()), states, host
    finally:
        host.stop()


def test_a_task_is_resumed_in_the_session_it_was_created_in(tmp_path, sdk1_server):
    task = orphaned_task(tmp_path, sdk1_server.url)
    assert ":" in task["task"] and task["session"]  # a session-scoped id, and the session it lives in
    text, states, _ = resumed(tmp_path, sdk1_server.url, task, session=task["session"])
    assert text == "Report on owls: 6 stages done"
    assert {s.task_id for s in states} == {task["task"]} and states[-1].status == "completed"
    assert {s.session for s in states} == {task["session"]}  # told where it lives, for a resume of the resume


def test_a_task_its_server_no_longer_knows_says_its_result_could_not_be_recovered(tmp_path, sdk1_server):
    task = orphaned_task(tmp_path, sdk1_server.url)
    text, _, _ = resumed(tmp_path, sdk1_server.url, task, session="")  # not known: the new session asks
    assert text.startswith('error: MCP tool "old__research" failed: ')
    assert f"the server no longer knows task {task['task']}: its result could not be recovered" in text
