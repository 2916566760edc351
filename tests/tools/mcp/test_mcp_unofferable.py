"""Tools that are valid MCP but cannot be offered to a model (unofferable_server.py): an input schema
that is not JSON Schema, and a tool that runs only as an MCP task. Each is left out alone, with why,
and the server's other tools are served."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from agents.run.pipeline import select_tools
from tests.helpers.mcp import START_TIMEOUT, all_settled, write_config
from tools.mcp.host import McpHost
from tools.mcp.listing import TASKS_REQUIRED, unofferable
from tools.registry import ToolRegistry

SERVER = Path(__file__).with_name("unofferable_server.py")
TYPO = "invalid definition: inputSchema is not valid JSON Schema: properties.text.type: 'strin' is not valid"


@pytest.fixture(scope="module")
def unofferable_host(tmp_path_factory):
    registry = ToolRegistry("mcp")
    config = write_config(
        tmp_path_factory.mktemp("mcp") / "mcp.json", {"u": {"command": "python", "args": [str(SERVER)]}}
    )
    host = McpHost(config, registry=registry)
    host.start()
    host.wait_until_sync(all_settled, START_TIMEOUT)
    yield host, registry
    host.stop()


@pytest.mark.slow
def test_an_invalid_schema_and_a_task_only_tool_are_left_out_with_why(unofferable_host):
    host, registry = unofferable_host
    (status,) = host.status()

    assert status.describe() == "ready with 2 tools, 2 dropped"
    assert status.tools == ("u__echo", "u__task_maybe")
    dropped = dict(status.dropped)
    assert dropped["typo_schema"].startswith(TYPO)
    assert dropped["task_only"] == TASKS_REQUIRED
    selection = select_tools(policy=["*"], toggles={}, execution="agent", mcp=registry, server_order=["u"])
    assert "u__typo_schema" not in selection.names and "u__task_only" not in selection.names
    result = asyncio.run(registry.get("u__task_maybe").execute("{}", None))
    assert result.result == "ran without a task"  # "optional": a plain call is answered


@pytest.mark.parametrize(
    ("tool", "problem"),
    [
        ({"inputSchema": {"type": "object", "required": "text"}}, "required: 'text' is not of type 'array'"),
        (
            {"inputSchema": {"type": "object"}, "outputSchema": {"type": "object", "properties": []}},
            "outputSchema is not valid JSON Schema: properties: [] is not of type 'object'",
        ),
        (
            {
                "inputSchema": {
                    "$schema": "http://json-schema.org/draft-07/schema#",
                    "type": "object",
                    "properties": {"n": {"type": "integer", "minimum": "0"}},
                }
            },
            "properties.n.minimum: '0' is not of type 'number'",
        ),
        ({"inputSchema": {"type": "object", "$schema": 7}}, "$schema: must be a string"),
    ],
)
def test_schemas_are_checked_against_their_meta_schema(tool, problem):
    assert problem in unofferable({"name": "t", **tool})


@pytest.mark.parametrize(
    "tool",
    [
        {"inputSchema": {"type": "object", "properties": {"a": {"type": ["string", "null"]}}}},
        {
            "inputSchema": {
                "type": "object",
                "$defs": {"x": {"type": "string"}},
                "properties": {"a": {"$ref": "#/$defs/x"}},
            }
        },
        {"inputSchema": {"type": "object"}, "execution": {"taskSupport": "forbidden"}},
        {"inputSchema": {"type": "object", "$schema": "https://example.com/a-dialect-of-its-own"}},
    ],
)
def test_valid_schemas_and_tools_that_need_no_task_are_offered(tool):
    assert unofferable({"name": "t", **tool}) == ""
