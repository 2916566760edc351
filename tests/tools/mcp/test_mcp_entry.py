"""How MCP tools look in the registry (names, schemas, guidance) and how their results read."""

from __future__ import annotations

import mcp_types as types

from tools.mcp.entry import McpToolEntry, registry_name
from tools.mcp.rich import format_result
from tools.registry import validate_tool_contract


def tool(**fields) -> types.Tool:
    return types.Tool(**{"name": "query", "input_schema": {"type": "object"}, **fields})


def test_names_are_server__tool_with_characters_the_model_api_refuses_replaced():
    assert registry_name("sql", "query") == "sql__query"
    assert registry_name("docs", "search.pages/v2") == "docs__search_pages_v2"
    assert registry_name("docs", "x" * 60) is None  # longer than 64 characters


def test_an_entry_keeps_the_input_schema_and_annotations():
    schema = {
        "type": "object",
        "properties": {"sql": {"type": "string", "description": "One statement."}},
        "required": ["sql"],
        "$defs": {},
    }
    entry = McpToolEntry(
        server="sql",
        name="sql__query",
        port=None,  # never called
        tool=tool(
            description="Run a read-only query.\nReturns a table.",
            input_schema=schema,
            annotations=types.ToolAnnotations(read_only_hint=True),
        ),
    )

    assert validate_tool_contract(entry) == "sql__query"
    assert entry.get_schema() == {
        "type": "function",
        "function": {
            "name": "sql__query",
            "description": "Run a read-only query.\nReturns a table.",
            "parameters": schema,
        },
    }
    assert entry.TOOL_USAGE_METADATA == 'Run a read-only query (read-only, MCP server "sql").'
    assert entry.read_only is True


def test_a_schema_without_properties_and_a_tool_without_description_still_register():
    entry = McpToolEntry(
        server="ops",
        name="ops__restart",
        port=None,  # never called
        tool=tool(name="restart", input_schema={}, annotations=types.ToolAnnotations(destructive_hint=True)),
    )

    assert validate_tool_contract(entry) == "ops__restart"
    assert entry.get_schema()["function"]["parameters"] == {"type": "object", "properties": {}}
    assert entry.TOOL_USAGE_METADATA == 'The MCP tool "restart" (may change or delete data, MCP server "ops").'


def test_results_join_text_and_describe_other_content():
    result = types.CallToolResult(
        content=[
            types.TextContent(type="text", text="| a |\n|---|\n| 1 |"),
            types.ImageContent(type="image", data="aGVsbG8h", mime_type="image/png"),
            types.ResourceLink(type="resource_link", name="report", uri="file:///tmp/report.csv", mime_type="text/csv"),
            types.EmbeddedResource(
                type="resource", resource=types.TextResourceContents(uri="mem://note", text="a note")
            ),
        ]
    )

    assert format_result(result, "sql__query").result == (
        "| a |\n|---|\n| 1 |\n[image image/png, 6 bytes]\n[resource link file:///tmp/report.csv (text/csv)]\na note"
    )


def test_structured_content_is_used_when_there_is_no_content():
    result = types.CallToolResult(content=[], structured_content={"rows": 3})
    assert format_result(result, "sql__query").result == '{"rows": 3}'


def test_a_tool_side_error_carries_the_servers_text():
    failed = format_result(
        types.CallToolResult(content=[types.TextContent(type="text", text="no such table: x")], is_error=True),
        "sql__query",
    )
    silent = format_result(types.CallToolResult(content=[], is_error=True), "sql__query")

    assert (failed.successful, failed.error_message) == (False, "no such table: x")
    assert silent.error_message == 'MCP tool "sql__query" failed without a message.'
