"""A check whose tool's MCP server asks the user a question (elicitation): the check run declines it, as
the session's owner would, lists it, and the turn goes on to its end with the server told "decline" —
whether the run holds the question (stdio) or nothing does and the answer resumes the call (a
streamable-HTTP multi round-trip)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from agents.catalog_tests import CheckCase, checks_run
from agents.models import AgentSession, ToolApproval, Turn, TurnEvent
from agents.run.runners import LocalRunner
from agents.runner import use_runner
from modes.models import AgentMode
from tests.helpers import async_db
from tests.helpers.mcp import START_TIMEOUT, HttpServer, all_settled, write_config
from tools.mcp.host import McpHost

pytestmark = [async_db, pytest.mark.slow]  # a real MCP server process

ASK = Path(__file__).resolve().parents[2] / "tools" / "mcp" / "ask_server.py"


@pytest.fixture(scope="module")
def ask_host(tmp_path_factory):
    config = write_config(
        tmp_path_factory.mktemp("mcp") / "mcp.json", {"ask": {"command": sys.executable, "args": [str(ASK)]}}
    )
    host = McpHost(config)
    host.start()
    assert [s.state for s in host.wait_until_sync(all_settled, START_TIMEOUT)] == ["ready"]
    yield host
    host.stop()


@pytest.fixture(scope="module")
def http_ask_host(tmp_path_factory):
    """The asking server over streamable HTTP (a 2026-07-28 multi round-trip), as "askhttp"."""
    server = HttpServer()
    server.listener.listen()
    fd = server.listener.fileno()
    server.process = subprocess.Popen([sys.executable, str(ASK), "--http", str(fd)], pass_fds=[fd])
    host = McpHost(write_config(tmp_path_factory.mktemp("mcp") / "mcp.json", {"askhttp": {"url": server.url}}))
    host.start()
    assert [s.state for s in host.wait_until_sync(all_settled, START_TIMEOUT)] == ["ready"]
    yield host
    host.stop()
    server.close()


async def declined_check(tool: str, team, user, model) -> None:
    await AgentMode.objects.filter(key="general").aupdate(tool_policy=["*"])
    model.reply("", tool_calls=[(tool, {})])
    model.reply("You chose not to answer.")
    case = CheckCase("general", "Ask me", "agent", {"tool": tool, "contains": "not to answer"})
    with use_runner(LocalRunner()):
        result = await checks_run(user=user, team=team, cases=[case])
    [check] = result.checks
    assert (check.ok, check.failed, check.status) == (True, [], "completed")
    assert (check.declined, check.approved) == ([tool], [])
    turn = await Turn.objects.aget(session__catalog_test=True)
    row = await ToolApproval.objects.aget(turn=turn)
    assert (row.kind, row.decision, row.decided_by_id) == ("elicitation", "declined", user.pk)
    told = await TurnEvent.objects.filter(turn=turn, type="tool.result").aget()
    assert told.payload["result"].startswith("decline")  # the server heard the refusal
    assert (await AgentSession.objects.aget(catalog_test=True)).deleted_at is not None


async def test_a_question_the_run_holds_is_declined_and_listed(ask_host, team_a, alice, model, llm):
    await declined_check("ask__profile", team_a, alice, model)


async def test_a_question_no_run_holds_is_declined_and_the_call_resumed(http_ask_host, team_a, alice, model, llm):
    await declined_check("askhttp__profile", team_a, alice, model)
