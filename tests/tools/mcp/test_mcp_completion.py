"""Argument completion (`completion/complete`) against a real server: the values it suggests for a
prompt's and a URI template's argument as typed so far (with the other arguments as context, at most
the specification's 100, `hasMore` when it has more), requests for what the server does not list
refused before it is asked, and a server without the `completions` capability suggesting nothing; on a
2026-07-28 server (the mcp SDK 2.3) and a 2025-11-25 one (1.30)."""

from __future__ import annotations

import asyncio

import pytest

from tests.helpers.mcp import by_name, guide_entry, ready_host
from tests.helpers.sdk1 import sdk1_entry
from tools.mcp import CompletionRequest, PromptRefused, Suggestions, parse_request
from tools.mcp.completion import suggestions, template_variables
from tools.mcp.host import McpHost
from tools.registry import ToolRegistry

pytestmark = pytest.mark.slow  # real subprocesses (servers)


@pytest.fixture(scope="module")
def guide_host(tmp_path_factory):
    servers = {"guide": guide_entry(), "quiet": guide_entry(env={"GUIDE_COMPLETIONS": "off"})}
    with ready_host(tmp_path_factory.mktemp("mcp"), servers, registry=ToolRegistry("mcp")) as host:
        yield host


def complete(host: McpHost, body: dict, server: str = "guide") -> Suggestions:
    return asyncio.run(host.complete(server, parse_request(body), user_id=None))


def prompt_argument(argument: str, value: str, **context: str) -> dict:
    return {
        "ref": {"type": "prompt", "name": "greeting"},
        "argument": {"name": argument, "value": value},
        "context": {"arguments": context},
    }


def test_the_server_declares_completions_and_suggests_a_prompts_argument(guide_host):
    statuses = by_name(guide_host.status())
    assert "completions" in statuses["guide"].handshake.server_capabilities
    assert "completions" not in statuses["quiet"].handshake.server_capabilities

    assert complete(guide_host, prompt_argument("name", "a")) == Suggestions(("Ada", "Alan"), has_more=False)
    assert complete(guide_host, prompt_argument("name", "")) == Suggestions(("Ada", "Alan"), has_more=True)
    assert complete(guide_host, prompt_argument("tone", "f")) == Suggestions(("formal", "friendly"))
    # the arguments already given go as context
    assert complete(guide_host, prompt_argument("tone", "", name="Grace")).values == ("formal",)
    assert complete(guide_host, prompt_argument("name", "zz")).as_json() == {"values": [], "hasMore": False}


def test_a_uri_templates_argument_is_completed(guide_host):
    body = {"ref": {"type": "resource", "uri": "guide://people/{name}"}, "argument": {"name": "name", "value": "g"}}
    assert complete(guide_host, body).as_json() == {"values": ["Grace"], "hasMore": False}


def test_a_handshake_era_server_completes_too(tmp_path):
    """The same request to a 2025-11-25 server (the mcp SDK 1.30 one): a URI template's variable."""
    with ready_host(tmp_path, {"sdk1": sdk1_entry(initTimeout=60)}, registry=ToolRegistry("mcp")) as host:
        handshake = by_name(host.status())["sdk1"].handshake
        assert handshake.protocol_version == "2025-11-25" and "completions" in handshake.server_capabilities
        body = {"ref": {"type": "resource", "uri": "note://day/{day}"}, "argument": {"name": "day", "value": "T"}}
        assert complete(host, body, server="sdk1").as_json() == {"values": ["tuesday", "thursday"], "hasMore": False}


def test_a_server_without_the_capability_suggests_nothing(guide_host):
    assert complete(guide_host, prompt_argument("name", "a"), server="quiet") == Suggestions()


def test_what_the_server_does_not_list_is_refused_before_it_is_asked(guide_host):
    cases = [
        ({"ref": {"type": "prompt", "name": "farewell"}, "argument": {"name": "name"}}, 404, "ref.name"),
        ({"ref": {"type": "resource", "uri": "guide://readme"}, "argument": {"name": "name"}}, 404, "ref.uri"),
        (prompt_argument("mood", "a"), 400, "argument.name"),
        (
            {"ref": {"type": "resource", "uri": "guide://people/{name}"}, "argument": {"name": "age"}},
            400,
            "argument.name",
        ),
    ]
    for body, status, field in cases:
        with pytest.raises(PromptRefused) as refused:
            complete(guide_host, body)
        assert (refused.value.status, refused.value.field) == (status, field), body
    with pytest.raises(PromptRefused) as unknown:
        complete(guide_host, prompt_argument("name", "a"), server="nobody")
    assert unknown.value.status == 404 and unknown.value.field == "server"


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ([], None),
        ({"ref": {"type": "tool", "name": "x"}, "argument": {"name": "a"}}, "ref"),
        ({"ref": {"type": "prompt"}, "argument": {"name": "a"}}, "ref.name"),
        ({"ref": {"type": "prompt", "name": "p"}, "argument": {"value": "a"}}, "argument"),
        ({"ref": {"type": "prompt", "name": "p"}, "argument": {"name": "a", "value": 3}}, "argument.value"),
        (
            {"ref": {"type": "prompt", "name": "p"}, "argument": {"name": "a"}, "context": {"arguments": {"b": 1}}},
            "context.arguments",
        ),
    ],
)
def test_malformed_requests_are_refused_naming_the_field(body, field):
    with pytest.raises(PromptRefused) as refused:
        parse_request(body)
    assert refused.value.status == 400 and refused.value.field == field


def test_a_request_and_an_answer_are_kept_within_the_specifications_limits():
    request = parse_request(prompt_argument("tone", "f", name="Ada"))
    assert request == CompletionRequest("prompt", "greeting", "tone", "f", (("name", "Ada"),))
    import mcp_types as types

    many = suggestions(types.Completion(values=[f"v{i}" for i in range(150)] + ["v1"]))
    assert len(many.values) == 100 and many.has_more
    assert suggestions(types.Completion(values=["a"], total=3)).has_more
    assert template_variables("file:///{+path}{?q,lang}/{id*}") == ("path", "q", "lang", "id")
