"""A server's prompts: listed with their arguments once its session is up (status, `mcp_status
--json`), got with their arguments and rendered as one text (roles labelled when both speak, an
embedded text resource written out); unknown prompts, unknown or missing arguments are refused before
the server is asked, and the server's own refusal is passed on."""

from __future__ import annotations

import asyncio

import mcp_types as types
import pytest

from tests.helpers.mcp import by_name, fixture_entry, guide_entry, ready_host
from tools.mcp.host import McpHost
from tools.mcp.prompts import PromptArgument, PromptInfo, PromptRefused, render
from tools.registry import ToolRegistry

pytestmark = pytest.mark.slow  # real subprocesses (servers)


@pytest.fixture(scope="module")
def guide_host(tmp_path_factory):
    servers = {"guide": guide_entry(), "plain": fixture_entry()}
    with ready_host(tmp_path_factory.mktemp("mcp"), servers, registry=ToolRegistry("mcp")) as host:
        yield host


def got(host: McpHost, name: str, arguments=None, server: str = "guide"):
    return asyncio.run(host.get_prompt(server, name, arguments, user_id=None))


def refusal(host: McpHost, name: str, arguments=None, server: str = "guide") -> PromptRefused:
    with pytest.raises(PromptRefused) as refused:
        got(host, name, arguments, server)
    return refused.value


def test_prompts_are_listed_with_their_arguments(guide_host):
    statuses = by_name(guide_host.status())
    assert statuses["guide"].prompts == (
        PromptInfo(
            "greeting",
            "Greeting",
            "Write a greeting for someone.",
            (PromptArgument("name", required=True), PromptArgument("tone")),
        ),
        PromptInfo("house-style", "House style", "Answer in the house style."),
    )
    assert statuses["plain"].prompts == ()  # a server that lists none
    assert statuses["guide"].as_dict()["prompts"][0] == {
        "server": "guide",
        "name": "greeting",
        "title": "Greeting",
        "description": "Write a greeting for someone.",
        "arguments": [
            {"name": "name", "title": "name", "description": "", "required": True},
            {"name": "tone", "title": "tone", "description": "", "required": False},
        ],
    }
    assert [(p["server"], p["name"]) for p in guide_host.prompts()] == [
        ("guide", "greeting"),
        ("guide", "house-style"),
    ]


def test_a_prompt_is_got_with_its_arguments_and_rendered(guide_host):
    greeting = got(guide_host, "greeting", {"name": "Ada", "tone": "formal"})
    assert greeting.text == "Write a formal greeting for Ada."
    assert greeting.messages == [{"role": "user", "content": {"type": "text", "text": greeting.text}}]
    # an empty optional argument is left out: the server's default applies
    assert got(guide_host, "greeting", {"name": "Ada", "tone": ""}).text == "Write a warm greeting for Ada."

    exchange = got(guide_host, "house-style")
    assert exchange.text == (
        "User: How do we greet people?\n\nAssistant: By name, politely.\n\nUser: guide://readme:\n\n# Guide"
    )


def test_wrong_prompts_and_arguments_are_refused_before_the_server_is_asked(guide_host):
    missing = refusal(guide_host, "greeting", {"tone": "warm"})
    assert (missing.status, missing.field, missing.message) == (400, "arguments.name", '"name" is required.')
    unknown = refusal(guide_host, "greeting", {"name": "Ada", "colour": "red"})
    assert (unknown.status, unknown.field) == (400, "arguments.colour")
    assert refusal(guide_host, "greeting", {"name": 3}).field == "arguments"
    assert refusal(guide_host, "greeting", ["Ada"]).field == "arguments"
    nothing = refusal(guide_host, "farewell")
    assert (nothing.status, nothing.message) == (404, 'No MCP server here offers the prompt "farewell" of "guide".')
    assert refusal(guide_host, "greeting", {"name": "Ada"}, server="plain").status == 404


def test_render_names_what_it_cannot_write_out():
    messages = [
        types.PromptMessage(role="user", content=types.TextContent(type="text", text="Look:")),
        types.PromptMessage(role="user", content=types.ImageContent(type="image", data="AAAA", mime_type="image/png")),
        types.PromptMessage(
            role="user", content=types.ResourceLink(type="resource_link", uri="guide://readme", name="readme")
        ),
    ]
    assert render(messages) == "Look:\n\n[image image/png, not shown here]\n\n[readme](guide://readme)"
