"""`mcp_read_resource` in turns: offered in Agent turns when an allowed MCP server lists resources
(and not otherwise), it reads a URI such a server offers, text and images alike, and refuses any
other URI, including one of a server the turn may not use."""

from __future__ import annotations

import pytest

from agents.models import AgentSession
from modes.models import AgentMode
from tests.helpers import async_db
from tests.helpers.mcp import guide_entry, ready_host

pytestmark = [async_db, pytest.mark.slow]  # a real MCP server process


@pytest.fixture(scope="module")
def guide_host(tmp_path_factory):
    with ready_host(tmp_path_factory.mktemp("mcp"), {"guide": guide_entry()}, serving=True) as host:
        yield host  # the process's host: the one the reasoner, views and API use


async def results_of(turn):
    return [e.payload async for e in turn.events.filter(type="tool.result")]


async def test_the_model_reads_a_listed_resource_and_an_image(
    guide_host, make_session, model, run_turn, settings, tmp_path
):
    settings.MEDIA_ROOT = tmp_path / "media"  # images are stored for the session
    await AgentMode.objects.filter(key="general").aupdate(tool_policy=["*"])
    session = await make_session(mode="general", execution="agent")
    model.reply("", tool_calls=[("mcp_read_resource", {"uri": "guide://people/ada"})])
    model.reply("", tool_calls=[("mcp_read_resource", {"uri": "guide://pixel.png"})])
    model.reply("", tool_calls=[("mcp_read_resource", {"uri": "https://example.com/"})])
    model.reply("Read.")
    turn = await run_turn(session, text="Read Ada's card")
    assert "mcp_read_resource" in [t["function"]["name"] for t in model.requests[0]["tools"]]
    text, image, refused = await results_of(turn)
    assert text["ok"] and "ada likes being greeted." in text["result"]
    assert image["ok"] and [a["kind"] for a in image["attachments"]] == ["image"]
    assert not refused["ok"] and refused["error"] == "No MCP server here offers the resource https://example.com/."


async def test_not_offered_when_no_allowed_server_lists_resources(guide_host, make_session, model, run_turn):
    await AgentMode.objects.filter(key="general").aupdate(tool_policy=["list_modes"])
    session = await make_session(mode="general", execution="agent")
    model.reply("Nothing to read.")
    await run_turn(session, text="Read something")
    assert "mcp_read_resource" not in [t["function"]["name"] for t in model.requests[0].get("tools", [])]


async def test_a_server_the_turn_may_not_use_is_not_read(guide_host, make_session, model, run_turn):
    await AgentMode.objects.filter(key="general").aupdate(tool_policy=["*"])
    session = await make_session(mode="general", execution="agent")
    await AgentSession.objects.filter(pk=session.pk).aupdate(tool_toggles={"guide": False})
    model.reply("", tool_calls=[("mcp_read_resource", {"uri": "guide://readme"})])
    model.reply("Done.")
    turn = await run_turn(session, text="Read the readme")
    [result] = await results_of(turn)
    assert not result["ok"]
