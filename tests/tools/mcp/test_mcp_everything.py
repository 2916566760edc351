"""The MCP host against the reference `everything` server from npm (tests/helpers/everything.py;
skipped with the reason when node or npm is missing): its streamable-HTTP server killed and
restarted gets a new session, although it answers the old one with HTTP 400 rather than 404; its
sample image (an iCCP chunk with a bad CRC) is an image; its task-only tool is offered (it runs tasks);
its prompts are listed and got with their arguments."""

from __future__ import annotations

import asyncio
import json

import pytest

from tests.helpers.everything import EverythingHttp, everything_server
from tests.helpers.mcp import START_TIMEOUT, all_settled, write_config
from tools.mcp.host import McpHost
from tools.mcp.prompts import PromptRefused
from tools.registry import ToolRegistry

pytestmark = pytest.mark.slow  # real subprocesses (node servers)


@pytest.fixture(scope="module")
def entry():
    return everything_server()


@pytest.fixture
def host_for(tmp_path):
    hosts = []

    def start(server: dict) -> tuple[McpHost, ToolRegistry]:
        registry = ToolRegistry("mcp")
        host = McpHost(
            write_config(tmp_path / "mcp.json", {"everything": {"timeout": 30, **server}}), registry=registry
        )
        hosts.append(host)
        host.start()
        host.wait_until_sync(all_settled, START_TIMEOUT)
        return host, registry

    yield start
    for host in hosts:
        host.stop()


def call(registry: ToolRegistry, tool: str, /, **arguments):
    return asyncio.run(registry.get(tool).execute(json.dumps(arguments), None))


def test_a_killed_and_restarted_http_server_gets_a_new_session(entry, host_for):
    server = EverythingHttp(entry)
    server.start()
    try:
        host, registry = host_for({"url": server.url})
        assert host.status()[0].state == "ready", host.status()
        assert call(registry, "everything__echo", message="before").result == "Echo: before"

        server.kill()
        server.start()

        assert call(registry, "everything__echo", message="after").result == "Echo: after"
        assert call(registry, "everything__echo", message="again").result == "Echo: again"
        (status,) = host.wait_until_sync(lambda s: s[0].state == "ready", START_TIMEOUT)
        assert status.restarts == 1
        assert status.error.endswith(": Bad Request: No valid session ID provided)"), status.error
    finally:
        server.kill()


def test_the_tiny_image_is_an_image_and_the_task_only_tool_is_offered(entry, host_for):
    host, registry = host_for({"command": "node", "args": [str(entry), "stdio"]})
    (status,) = host.status()
    assert status.state == "ready", status

    result = call(registry, "everything__get-tiny-image")

    images = [a for a in result.attachments if a.kind == "image"]
    assert [(a.mime, a.width, a.height) for a in images] == [("image/png", 20, 20)]
    # It declares tasks for tools/call, so its tool that runs only as a task is offered (test_mcp_tasks.py)
    assert "simulate-research-query" not in dict(status.dropped)
    assert "everything__simulate-research-query" in registry


def test_its_prompts_are_listed_and_got_with_their_arguments(entry, host_for):
    host, _ = host_for({"command": "node", "args": [str(entry), "stdio"]})
    (status,) = host.status()
    prompts = {prompt.name: prompt for prompt in status.prompts}
    assert {"simple-prompt", "args-prompt", "completable-prompt", "resource-prompt"} <= set(prompts)
    assert [(a.name, a.required) for a in prompts["args-prompt"].arguments] == [("city", True), ("state", False)]

    def got(name: str, arguments: dict):
        return asyncio.run(host.get_prompt("everything", name, arguments, user_id=None))

    assert got("args-prompt", {"city": "Lyon"}).text == "What's weather in Lyon?"
    assert got("args-prompt", {"city": "Austin", "state": "Texas"}).text == "What's weather in Austin, Texas?"
    embedded = got("resource-prompt", {"resourceType": "Text", "resourceId": "2"})
    assert embedded.text.startswith("This prompt includes the Text resource with id: 2.")
    assert [m["content"]["type"] for m in embedded.messages] == ["text", "resource"]
    with pytest.raises(PromptRefused) as refused:
        got("resource-prompt", {"resourceType": "Video", "resourceId": "2"})
    assert (refused.value.status, refused.value.message) == (
        502,  # the server's own refusal, passed on (not -32602: it is the server's error, said as it said it)
        'MCP server "everything": Invalid resourceType: Video. Must be Text or Blob.',
    )
