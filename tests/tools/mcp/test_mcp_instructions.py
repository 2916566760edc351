"""A server's `instructions` reach the system prompt of turns that offer its tools, under the
server's name and within APTIX_MCP_INSTRUCTIONS_CHARS each (so also the turn's trace); the status
records the negotiated protocol version and the capabilities each side declared (admin page,
`manage.py mcp_status`)."""

from __future__ import annotations

import json
import re
import sys
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command

from agents.run.pipeline import ToolSelection, mcp_instructions
from modes.models import AgentMode
from tests.helpers import async_db
from tests.helpers.mcp import START_TIMEOUT, all_settled, by_name, fixture_entry, ready_host, write_config
from tools.mcp import host as host_module
from tools.mcp.handshake import INSTRUCTIONS_HEADING, demote_headings, instructions_prompt, summary
from tools.mcp.host import McpHost

pytestmark = pytest.mark.slow  # real subprocesses (servers, workers, web processes)

GUIDE = Path(__file__).with_name("guide_server.py")
LONG = "Rule one: be brief. " + "x" * 2000 + " THE END"


def guide_entry(text: str) -> dict:
    return {"command": sys.executable, "args": [str(GUIDE)], "env": {"GUIDE_INSTRUCTIONS": text}}


@pytest.fixture(scope="module")
def guide_host(tmp_path_factory):
    """`guide` (long instructions), `short` (the default ones) and the fixture server (none), as
    this process's host, publishing into the process-wide registry the reasoner offers from."""
    config = write_config(
        tmp_path_factory.mktemp("mcp") / "mcp.json",
        {
            "guide": guide_entry(LONG),
            "short": {"command": sys.executable, "args": [str(GUIDE)]},
            "plain": fixture_entry(),
        },
    )
    host = McpHost(config)
    host.start()
    statuses = host.wait_until_sync(all_settled, START_TIMEOUT)
    assert [s.state for s in statuses] == ["ready"] * 3, statuses
    previous, host_module._host = host_module._host, host
    yield host
    host_module._host = previous
    host.stop()


def test_the_status_records_the_protocol_and_what_each_side_declared(guide_host):
    guide = by_name(guide_host.status())["guide"].handshake
    assert guide.protocol_version
    assert "tools" in guide.server_capabilities
    assert guide.instructions == LONG
    assert by_name(guide_host.status())["plain"].handshake.instructions == ""
    assert isinstance(guide.client_capabilities, dict)  # what the SDK session sent, read back


def test_capability_summaries_name_the_flags_set():
    assert summary({"tools": {"listChanged": True}, "resources": {"subscribe": False}, "logging": {}}) == (
        "tools (listChanged), resources, logging"
    )
    assert summary({}) == "none"


def test_each_servers_instructions_are_cut_to_the_budget_under_its_name():
    text = instructions_prompt([("guide", LONG), ("plain", ""), ("short", "Be kind.")], 100)
    assert text.startswith(INSTRUCTIONS_HEADING)
    assert "## guide\nRule one: be brief." in text and "THE END" not in text
    assert "… (cut to 100 characters)" in text
    assert "## short\nBe kind." in text and "## plain" not in text
    assert instructions_prompt([("guide", LONG)], 0) == ""


def test_only_servers_with_an_offered_tool_contribute(guide_host, settings):
    settings.APTIX_MCP_INSTRUCTIONS_CHARS = 50
    selection = ToolSelection(kinds={"guide__greet": "mcp", "plain__echo": "mcp"})
    text = mcp_instructions(selection)
    assert "## guide\nRule one: be brief." in text and "(cut to 50 characters)" in text
    assert "## short" not in text and "## plain" not in text
    settings.APTIX_MCP_INSTRUCTIONS_CHARS = 1000
    assert mcp_instructions(ToolSelection(kinds={"short__greet": "mcp"})).endswith(
        "## short\nAlways greet politely. Call greet before anything else."
    )


@async_db
async def test_a_turn_sends_the_instructions_in_its_system_prompt_and_trace(
    guide_host, make_session, model, run_turn, settings
):
    settings.APTIX_MCP_INSTRUCTIONS_CHARS = 1000
    await AgentMode.objects.filter(key="general").aupdate(tool_policy=["*"])
    session = await make_session(mode="general", execution="agent")
    model.reply("Done.")
    turn = await run_turn(session, text="Greet Ada")
    system = model.last_messages[0]["content"]
    assert "## guide\nRule one: be brief." in system and "(cut to 1000 characters)" in system
    assert "## short\nAlways greet politely." in system
    assert turn.trace["system_prompt"] == system


def test_mcp_status_prints_the_protocol_and_capabilities(tmp_path):
    config = write_config(tmp_path / "mcp.json", {"short": {"command": sys.executable, "args": [str(GUIDE)]}})
    out = StringIO()
    call_command("mcp_status", "--config", str(config), stdout=out)
    line = out.getvalue().splitlines()[-1]
    assert line.startswith("short: protocol 20") and "tools (listChanged)" in line
    assert "Aptix declared" in line and line.endswith("instructions: 55 characters")

    out = StringIO()
    call_command("mcp_status", "--config", str(config), "--json", stdout=out)
    (server,) = json.loads(out.getvalue())["servers"]
    assert server["handshake"]["protocol_version"] and "tools" in server["handshake"]["server_capabilities"]
    assert server["handshake"]["instructions"].startswith("Always greet")
    assert "client_capabilities" in server["handshake"]


def test_the_admin_page_shows_them(client, guide_host, curator, password):
    client.login(username="curtis", password=password)
    html = client.get("/admin/mcp/").content.decode()
    assert "<td class=\"mcp-handshake\">2026-07-28" in html
    declared = "prompts (listChanged), resources (subscribe, listChanged), tools (listChanged), completions"
    assert f"<strong>Server declared:</strong> {declared}" in html
    assert "<strong>Aptix declared:</strong>" in html
    assert "Instructions (2028 characters; the first 1000 go into the system prompt)" in html


HEADINGS = "# Guide server\nRead this first.\n## Tools\nCall greet.\n```\n## not a heading (code)\n```\nTips\n===="


@pytest.fixture
def headings_host(tmp_path):
    with ready_host(tmp_path, {"headings": guide_entry(HEADINGS)}, serving=True) as host:
        yield host


@async_db
async def test_a_servers_own_headings_are_demoted_below_its_block_in_the_request(
    headings_host, make_session, model, run_turn, settings
):
    settings.APTIX_MCP_INSTRUCTIONS_CHARS = 1000
    await AgentMode.objects.filter(key="general").aupdate(tool_policy=["*"])
    session = await make_session(mode="general", execution="agent")
    model.reply("Done.")
    await run_turn(session, text="Greet Ada")

    system = model.last_messages[0]["content"]
    block = system[system.index("## headings\n") :]
    assert block == (
        "## headings\n### Guide server\nRead this first.\n#### Tools\nCall greet.\n"
        "```\n## not a heading (code)\n```\n### Tips"
    )
    # The only headings of level 1 or 2 after the section's own are the servers' names.
    section = system[system.index(INSTRUCTIONS_HEADING) :].split("```")[0::2]
    headings = [line for part in section for line in part.splitlines() if re.match(r" {0,3}#{1,2}(\s|$)", line)]
    assert headings == [INSTRUCTIONS_HEADING, "## headings"]


def test_demoting_stops_at_six_and_leaves_rules_lists_and_fences_alone():
    text = "##### Deep\n- item\n---\n\n---\n~~~\n# kept\n~~~\nPara\n---"
    assert demote_headings(text, 2) == "###### Deep\n- item\n---\n\n---\n~~~\n# kept\n~~~\n#### Para"
