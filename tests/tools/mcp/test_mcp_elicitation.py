"""Elicitation at the MCP layer: Aptix declares it (form and URL modes); a server that asks during a
tool call (a 2026-07-28 multi round-trip from our mcp 2.x server; a server-initiated request from the
reference `everything` server) reaches whoever made the call, and their answer reaches the server; a
call nobody can answer is cancelled; forms are checked against what the specification allows, and
the user's input against the form."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import pytest

from tests.helpers.everything import everything_server
from tests.helpers.mcp import START_TIMEOUT, all_settled, by_name, ready_host, write_config
from tests.helpers.sdk1 import sdk1_entry
from tools.base import CallContext
from tools.mcp.elicitation import URL_REQUIRED, Answer, Asker, InputPause, Request, form_fields, validate_content
from tools.mcp.host import McpHost
from tools.registry import ToolRegistry

from .ask_server import PROFILE

pytestmark = pytest.mark.slow  # real subprocesses (servers)

ASK = Path(__file__).with_name("ask_server.py")


@pytest.fixture(scope="module")
def ask_host(tmp_path_factory):
    registry = ToolRegistry("mcp")
    config = write_config(
        tmp_path_factory.mktemp("mcp") / "mcp.json", {"ask": {"command": sys.executable, "args": [str(ASK)]}}
    )
    host = McpHost(config, registry=registry)
    host.start()
    host.wait_until_sync(all_settled, START_TIMEOUT)
    yield host, registry
    host.stop()


def call_asking(registry: ToolRegistry, tool: str, answer: Answer | None) -> tuple[str, list[Request]]:
    asked: list[Request] = []

    async def ask(request: Request) -> Answer:
        asked.append(request)
        assert answer is not None
        return answer

    async def run() -> str:
        if answer is None:
            result = await registry.get(tool).execute("{}", None)
        else:
            result = await registry.get(tool).execute("{}", CallContext.of(None, asker=Asker.here(ask)))
        return result.result if result.successful else f"error: {result.error_message}"

    return asyncio.run(run()), asked


def test_aptix_declares_form_and_url_elicitation(ask_host):
    host, _ = ask_host
    handshake = by_name(host.status())["ask"].handshake
    assert handshake.protocol_version == "2026-07-28"
    assert handshake.client_capabilities["elicitation"] == {"form": {}, "url": {}}
    # (and sampling, and on 2026-07-28 the tasks extension (test_mcp_tasks.py) and MCP Apps (apps.py))
    extensions = "io.modelcontextprotocol/tasks, io.modelcontextprotocol/ui"
    assert handshake.client_summary() == f"sampling, elicitation (form, url), extensions ({extensions})"


def test_a_form_request_reaches_the_caller_and_the_answer_the_server(ask_host):
    _, registry = ask_host
    text, asked = call_asking(registry, "ask__profile", Answer("accept", {"name": "Ada", "age": 36}))
    assert text == "accept {'name': 'Ada', 'age': 36}"
    [request] = asked
    assert (request.server, request.mode, request.message) == ("ask", "form", "Tell me about you")
    assert request.schema["properties"]["colour"]["enum"] == ["red", "green"]


def test_decline_and_cancel_reach_the_server_without_content(ask_host):
    _, registry = ask_host
    assert call_asking(registry, "ask__profile", Answer("decline", {"name": "x"}))[0] == "decline None"
    assert call_asking(registry, "ask__profile", Answer("cancel"))[0] == "cancel None"


def test_a_url_request_carries_the_link_and_never_content(ask_host):
    _, registry = ask_host
    text, [request] = call_asking(registry, "ask__sign_in", Answer("accept", {"secret": "no"}))
    assert text == "accept None"
    assert (request.mode, request.url, request.message) == (
        "url",
        "https://bank.example/authorize",
        "Sign in at the bank",
    )


def test_a_call_nobody_can_answer_is_cancelled(ask_host):
    _, registry = ask_host
    assert call_asking(registry, "ask__profile", None)[0] == "cancel None"


def test_url_elicitation_required_pauses_a_durable_caller_and_names_the_page_to_anyone_else(ask_host):
    """-32042: a durable caller (a turn's run) gets an InputPause with the server's URL question; a
    caller that cannot pause (no asker, or one that is not durable) gets a failure naming the page."""
    _, registry = ask_host

    async def ask(request: Request) -> Answer:
        raise AssertionError("never asked in the call: the call has ended")

    async def call(arguments: str, durable: bool | None):
        asker = None if durable is None else Asker.here(ask, durable=durable)
        return await registry.get("ask__link_account").execute(arguments, CallContext.of(None, asker=asker))

    with pytest.raises(InputPause) as paused:
        asyncio.run(call(json.dumps({"account": "shares"}), True))
    request = paused.value.request
    assert (request.mode, request.url, request.message, request.elicitation_id) == (
        "url",
        "https://bank.example/link/shares",
        "Link your shares account first",
        "link-shares",
    )
    assert paused.value.key == URL_REQUIRED
    for durable in (None, False):
        result = asyncio.run(call(json.dumps({"account": "never"}), durable))
        assert result.error_message == (
            'MCP tool "ask__link_account" failed: URL elicitation required '
            "(visit https://bank.example/link/never, then call it again)"
        )


def test_url_elicitation_required_of_a_handshake_era_server_pauses_too(tmp_path):
    """The same -32042 from a 2025-11-25 server (the mcp SDK 1.30 one)."""
    registry = ToolRegistry("mcp")
    with ready_host(tmp_path, {"sdk1": sdk1_entry(initTimeout=60)}, registry=registry):

        async def ask(request: Request) -> Answer:
            raise AssertionError("never asked in the call: the call has ended")

        async def call():
            context = CallContext.of(None, asker=Asker.here(ask, durable=True))
            return await registry.get("sdk1__link").execute("{}", context)

        with pytest.raises(InputPause) as paused:
            asyncio.run(call())
        request = paused.value.request
        assert (request.mode, request.url, request.message) == (
            "url",
            "https://bank.example/link/sdk1",
            "Link your account",
        )


def test_a_server_initiated_request_of_a_handshake_era_server_reaches_the_caller(tmp_path):
    entry = everything_server()
    registry = ToolRegistry("mcp")
    host = McpHost(
        write_config(tmp_path / "mcp.json", {"everything": {"command": "node", "args": [str(entry), "stdio"]}}),
        registry=registry,
    )
    host.start()
    try:
        host.wait_until_sync(all_settled, START_TIMEOUT)
        assert "everything__trigger-elicitation-request" in registry  # shown to clients that declare it
        text, [request] = call_asking(
            registry, "everything__trigger-elicitation-request", Answer("accept", {"name": "Ada Lovelace"})
        )
        assert request.mode == "form" and "name" in request.schema["properties"]
        assert {f.kind for f in form_fields(request.schema)} >= {"text", "boolean", "integer", "enum", "multi"}
        assert "Name: Ada Lovelace" in text
    finally:
        host.stop()


def test_form_inputs_follow_the_schema():
    fields = {f.name: f for f in form_fields(PROFILE)}
    assert (fields["name"].kind, fields["name"].required) == ("text", True)
    assert fields["colour"].options == (("red", "Red"), ("green", "Green"))
    assert [fields[n].kind for n in ("age", "subscribe")] == ["integer", "boolean"]
    form = {"name": "Ada", "age": "36", "subscribe": "on", "colour": "green"}
    assert validate_content(PROFILE, form) == {"name": "Ada", "age": 36, "subscribe": True, "colour": "green"}
    assert validate_content(PROFILE, {"name": "Ada"}) == {"name": "Ada", "subscribe": False}


@pytest.mark.parametrize(
    ("given", "error"),
    [
        ({}, "Name: this is required."),
        ({"name": ""}, "Name: this is required."),
        ({"name": "Ada", "age": "old"}, "Age: enter a whole number."),
        ({"name": "Ada", "age": -1}, "Age: at least 0."),
        ({"name": "Ada", "colour": "blue"}, "Colour: choose one of the options."),
    ],
)
def test_wrong_input_is_refused_with_the_reason(given, error):
    with pytest.raises(ValueError, match=error):
        validate_content(PROFILE, given)


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "array"},
        {"type": "object", "properties": {"nested": {"type": "object"}}},
        {"type": "object", "properties": {"x": "string"}},
    ],
)
def test_forms_a_client_cannot_show_are_refused(schema):
    with pytest.raises(ValueError):
        form_fields(schema)


def test_json_answers_keep_their_types():
    assert validate_content(PROFILE, json.loads('{"name": "Ada", "age": 3, "subscribe": true}')) == {
        "name": "Ada",
        "age": 3,
        "subscribe": True,
    }
