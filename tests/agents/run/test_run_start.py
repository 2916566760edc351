"""How a run starts is a typed value (agents/run/run.py `start_of`), read from the turn's status and,
for a running turn, its open MCP task (agents/state.py OpenTask): not a status plus a state key."""

from __future__ import annotations

from agents.models import Turn
from agents.run.run import AfterClientTools, AfterDecisions, FollowTask, NewRun, start_of
from agents.state import OpenTask

TASK = {
    "call": {"id": "c1", "name": "slow__wait", "arguments": '{"s": 5}'},
    "kind": "mcp",
    "taskId": "t-1",
    "server": "slow",
    "resumable": True,
    "resumes": 2,
    "rest": [{"id": "c2", "name": "slow__done", "arguments": "{}"}],
}


def test_each_status_starts_its_own_way():
    assert start_of(Turn(status=Turn.Status.QUEUED, state={})) == NewRun()
    assert start_of(Turn(status=Turn.Status.AWAITING_APPROVAL, state={"messages": []})) == AfterDecisions()
    assert start_of(Turn(status=Turn.Status.REQUIRES_ACTION, state={"messages": []})) == AfterClientTools()
    # running with no task: a run handed on before it started anything starts anew
    assert start_of(Turn(status=Turn.Status.RUNNING, state={})) == NewRun()


def test_a_running_turn_with_an_open_task_follows_it():
    start = start_of(Turn(status=Turn.Status.RUNNING, state={"messages": [], "task": TASK}))
    assert isinstance(start, FollowTask)
    assert start.task.task_id == "t-1" and start.task.resumes == 2 and start.task.server == "slow"
    assert start.task.call == TASK["call"] and start.task.rest == TASK["rest"]
    assert start.task.to_json() == TASK  # what the sweep and the next run read back


def test_a_task_is_open_only_while_the_turn_runs():
    assert OpenTask.of(Turn(status=Turn.Status.AWAITING_APPROVAL, state={"task": TASK})) is None
    assert OpenTask.of(Turn(status=Turn.Status.RUNNING, state={"task": "not a task"})) is None


def test_a_task_keeps_the_mcp_session_it_was_created_in():
    task = {**TASK, "session": "0f3c…"}  # a server may know the task in that session only
    start = start_of(Turn(status=Turn.Status.RUNNING, state={"messages": [], "task": task}))
    assert isinstance(start, FollowTask) and start.task.session == "0f3c…"
    assert start.task.to_json() == task
