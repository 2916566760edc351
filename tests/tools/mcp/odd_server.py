"""A stdio MCP server that misbehaves in the ways real ones do, for the MCP host tests:
`python odd_server.py`. Besides `echo` and `big` (a result of any size) it offers a tool whose input
schema lacks `"type"` (as servers that skip validation send), two tools that are one name once
sanitised (`dotted.name`, `dotted_name`) and one whose name is too long for a model API."""

from __future__ import annotations

from mcp.server.mcpserver import MCPServer
from mcp_types import methods

LONG_NAME = "a_tool_whose_name_is_far_too_long_to_be_offered_to_a_model_at_all"  # 65 characters

server = MCPServer("odd")


@server.tool()
def echo(text: str) -> str:
    """Return the text unchanged."""
    return text


@server.tool()
def big(megabytes: float) -> str:
    """Answer with that many MiB of text."""
    return "x" * int(megabytes * 1024 * 1024)


@server.tool()
def no_type(x: str = "") -> str:
    """Listed with an input schema without "type"."""
    return x


@server.tool(name="dotted.name")
def dotted() -> str:
    """Called dotted.name on this server."""
    return "dotted.name"


@server.tool(name="dotted_name")
def underscored() -> str:
    """Called dotted_name on this server: the same registry name as dotted.name."""
    return "dotted_name"


@server.tool(name=LONG_NAME)
def long_named() -> str:
    """A name over 64 characters once prefixed with the server name."""
    return "long"


_serialize = methods.serialize_server_result


def _without_type(method: str, version: str, data, **options):
    """The SDK refuses to send a schema without "type"; other servers do not check."""
    dumped = _serialize(method, version, data, **options)
    if method == "tools/list":
        for tool in dumped["tools"]:
            if tool["name"] == "no_type":
                del tool["inputSchema"]["type"]
    return dumped


methods.serialize_server_result = _without_type

if __name__ == "__main__":
    server.run()
