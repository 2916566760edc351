"""Starting a run is one service (agents/submit.py turn_submit): what starts it is recorded first, and
only a recorded turn is dispatched, with the API client's tools and results. The workspace's views
and the JSON API all start runs through it: no module of the web layer dispatches a run itself."""

from __future__ import annotations

import ast
import asyncio
from functools import partial
from pathlib import Path

import pytest
from django.core.exceptions import ValidationError

from agents.runner import use_runner
from agents.submit import turn_submit
from agents.turns import ERROR_EMPTY_MESSAGE, turn_start
from tests.helpers import inline_db

WEB = Path(__file__).resolve().parents[2] / "agents" / "web"


class RecordingRunner:
    """Records what it is asked to start, runs nothing."""

    kind = "recording"

    def __init__(self) -> None:
        self.started: list[tuple[str, list[dict] | None, list[dict] | None]] = []

    def start(self, turn_id, *, client_tools=None, tool_results=None):
        self.started.append((turn_id, client_tools, tool_results))
        return asyncio.get_running_loop().create_future()

    def orphan_candidates(self, turns, now):  # the sweep a new turn makes of its session: none here
        return turns


@inline_db
async def test_a_recorded_turn_is_dispatched_with_the_clients_tools(make_session):
    session = await make_session()
    runner = RecordingRunner()
    tools = [{"type": "function", "function": {"name": "lookup"}}]
    with use_runner(runner):
        submitted = await turn_submit(partial(turn_start, session=session, text="Hello"), client_tools=tools)
    assert submitted is not None
    assert submitted.turn.user_message == "Hello"
    assert runner.started == [(submitted.turn.id, tools, None)]


@inline_db
async def test_a_refused_recording_dispatches_nothing(make_session):
    session = await make_session()
    runner = RecordingRunner()
    with use_runner(runner), pytest.raises(ValidationError) as refused:
        await turn_submit(partial(turn_start, session=session, text="   "))
    assert ERROR_EMPTY_MESSAGE in refused.value.messages
    assert runner.started == []


async def test_nothing_to_run_dispatches_nothing():
    runner = RecordingRunner()
    with use_runner(runner):
        assert await turn_submit(lambda: None) is None
    assert runner.started == []


def _is_runner(node: ast.expr) -> bool:
    """`get_runner()`, or a name for a runner (`runner`, `self.runner`)."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
        return node.func.id == "get_runner"
    name = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else ""
    return name.endswith("runner")


def dispatches(source: str) -> list[int]:
    """Lines of `source` that start a run on the runner themselves (`get_runner().start(…)`)."""
    return [
        node.lineno
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "start"
        and _is_runner(node.func.value)
    ]


@pytest.mark.parametrize("path", sorted(WEB.rglob("*.py")), ids=lambda p: str(p.relative_to(WEB)))
def test_the_web_layer_starts_runs_only_through_turn_submit(path: Path):
    assert dispatches(path.read_text()) == []


def test_the_check_sees_a_view_that_dispatches_itself():
    source = """
async def view(request):
    get_runner().start(turn.id)
    runner = get_runner()
    await runner.wait(turn.id, runner.start(turn.id))
    match.start()
"""
    assert dispatches(source) == [3, 5]
