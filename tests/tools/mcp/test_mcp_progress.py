"""MCP progress. Every tools/call carries a progressToken; the server's progress
notifications reach the tool card live as coalesced `tool.progress` events and give the call its
`timeout` again, up to the server's `maxTimeout`. A real server (rich_server.py) reports."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from asgiref.sync import sync_to_async

from agents.models import Turn
from agents.run.progress import PROGRESS_INTERVAL
from agents.web.live import LiveRenderer
from agents.web.timeline import render_turn
from modes.models import AgentMode
from tests.helpers import async_db
from tools.base import ToolContext
from tools.mcp.config import ServerConfigError, parse_server
from tools.mcp.host import McpHost
from tools.registry import ToolRegistry

pytestmark = pytest.mark.slow  # real subprocesses (servers, workers, web processes)

RICH = Path(__file__).with_name("rich_server.py")
READY_TIMEOUT = 60


def start_host(config_dir: Path, registry: ToolRegistry | None = None, **limits) -> McpHost:
    config = config_dir / "mcp.json"
    entry = {"command": sys.executable, "args": [str(RICH)], **limits}
    config.write_text(json.dumps({"mcpServers": {"rich": entry}}))
    host = McpHost(config, **({"registry": registry} if registry is not None else {}))
    host.start()
    statuses = host.wait_until_sync(lambda s: all(x.settled for x in s), READY_TIMEOUT)
    assert [s.state for s in statuses] == ["ready"], statuses
    return host


@pytest.fixture(scope="module")
def registry():
    return ToolRegistry("mcp")


@pytest.fixture(scope="module")
def short_host(tmp_path_factory, registry):
    """timeout 1 s, maxTimeout 3 s: calls that report progress may outlive the first, not the second."""
    # initTimeout: the 1 s is for calls; starting the server may take longer on a loaded machine
    host = start_host(tmp_path_factory.mktemp("mcp"), registry, timeout=1, maxTimeout=3, initTimeout=60)
    yield host
    host.stop()


CONTEXT = ToolContext(session_id=None, org=None, user=None)


async def call(registry, tool: str, reports: list | None = None, **arguments):
    entry = registry.get(f"rich__{tool}")
    on_progress = None if reports is None else (lambda *report: reports.append(report))
    return await entry.execute_with_progress(json.dumps(arguments), CONTEXT, on_progress)


async def test_progress_gives_a_call_its_timeout_again(short_host, registry):
    reports: list = []
    result = await call(registry, "steps", reports, count=4, pause=0.6)  # 2.4 s in all, > timeout 1 s
    assert (result.successful, result.result) == (True, "done after 4 steps")
    assert reports == [(float(n), 4.0, f"fetching part {n}") for n in range(1, 5)]


async def test_a_call_that_stops_reporting_times_out_and_says_so(short_host, registry):
    result = await call(registry, "stalls", [])
    assert result.error_message == 'MCP tool "rich__stalls" timed out after 1 s without progress'


async def test_a_call_that_reports_for_ever_stops_at_max_timeout_and_the_session_carries_on(short_host, registry):
    result = await call(registry, "endless", [], pause=0.2)
    assert result.error_message == 'MCP tool "rich__endless" ran for its maximum of 3 s ("maxTimeout") and was stopped'
    again = await call(registry, "chatty", None, count=3)  # the server was told to cancel; the session works
    assert again.result == "chatted"


def test_max_timeout_is_checked_and_defaults_to_ten_times_timeout(tmp_path):
    def server(**entry):
        return parse_server("s", {"command": sys.executable, **entry}, base_dir=tmp_path, environ={})

    assert server().max_timeout == 600 and server(timeout=5).max_timeout == 50
    assert server(timeout=5, maxTimeout=5).max_timeout == 5
    with pytest.raises(ServerConfigError, match=r'"maxTimeout" \(10 s\) must be at least "timeout" \(30 s\)'):
        server(timeout=30, maxTimeout=10)
    with pytest.raises(ServerConfigError, match=r'"maxTimeout" must be a positive number of seconds'):
        server(maxTimeout="an hour")


@pytest.fixture(scope="module")
def turn_host(tmp_path_factory):
    """The server in the process-wide registry, for whole turns."""
    host = start_host(tmp_path_factory.mktemp("mcp"))
    yield host
    host.stop()


@pytest.fixture
async def agent_session(make_session):
    await AgentMode.objects.filter(key="general").aupdate(tool_policy=["*"])
    return await make_session(mode="general", execution="agent")


async def events(turn: Turn) -> list:
    return [e async for e in turn.events.order_by("seq")]


@async_db
async def test_a_chatty_server_costs_the_stream_a_few_events(turn_host, agent_session, model, run_turn):
    model.reply("", tool_calls=[("rich__chatty", {"count": 1000})])
    model.reply("Done.")
    turn = await run_turn(agent_session, text="chat")
    stored = await events(turn)
    progress = [e.payload for e in stored if e.type == "tool.progress"]
    [result] = [e.payload for e in stored if e.type == "tool.result"]
    assert result["ok"] and result["result"] == "chatted"
    # 1,000 notifications: the first at once, then at most one per PROGRESS_INTERVAL while the call ran.
    assert 1 <= len(progress) <= 2 + result["duration_ms"] / 1000 / PROGRESS_INTERVAL
    assert progress[0]["id"] == result["id"] and progress[0]["name"] == "rich__chatty"
    assert [p["progress"] for p in progress] == sorted(p["progress"] for p in progress)
    assert progress[0]["total"] == 1000 and progress[0]["message"].startswith("item ")
    types = [e.type for e in stored]
    assert types.index("tool.called") < types.index("tool.progress") < types.index("tool.result")


@async_db
async def test_the_card_shows_the_progress_live_and_on_a_reloaded_page(turn_host, agent_session, model, run_turn):
    model.reply("", tool_calls=[("rich__steps", {"count": 2, "pause": 0.3})])
    model.reply("Done.")
    turn = await run_turn(agent_session, text="go")
    stored = await events(turn)
    first = next(e for e in stored if e.type == "tool.progress")
    call_id = first.payload["id"]
    expected = {"id": call_id, "name": "rich__steps", "progress": 1, "total": 2, "message": "fetching part 1"}
    assert first.payload == expected

    live = await sync_to_async(LiveRenderer(agent_session).render)(turn, "tool.progress", first.payload, first.seq)
    assert (
        f'<span class="tool-duration tool-progress" id="tool-{call_id}-progress" hx-swap-oob="true">'
        '<progress value="1" max="2" aria-label="Progress of rich__steps"></progress> 1/2 — fetching part 1</span>'
    ) in live

    # The page drawn while the call runs (the events up to this progress) shows it in the card.
    turn.status, turn.answer = Turn.Status.RUNNING, ""
    html = await sync_to_async(render_turn)(turn, [e for e in stored if e.seq <= first.seq])
    assert f'id="tool-{call_id}-progress">' in html and "1/2 — fetching part 1</span>" in html
    # Once the result is in, the card says how it ended instead.
    done = await sync_to_async(render_turn)(await Turn.objects.aget(pk=turn.pk), stored)
    assert "fetching part" not in done and f'id="tool-{call_id}"' in done
