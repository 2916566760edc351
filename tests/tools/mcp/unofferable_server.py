"""A stdio MCP server whose tools are valid MCP but cannot be offered to a model, for the MCP host
tests: `python unofferable_server.py`. Besides `echo` it lists `typo_schema`, whose input schema says
`"type": "strin"` (not JSON Schema: a model provider refuses the whole request over it),
`task_only`, which runs only as an MCP task (`execution.taskSupport: "required"`), and `task_maybe`,
which may run as one (`"optional"`) and so also answers a plain call."""

from __future__ import annotations

from mcp.server.mcpserver import MCPServer
from mcp_types import methods

server = MCPServer("unofferable")
TASK_SUPPORT = {"task_only": "required", "task_maybe": "optional"}


@server.tool()
def echo(text: str) -> str:
    """Return the text unchanged."""
    return text


@server.tool()
def typo_schema(text: str = "") -> str:
    """Listed with a parameter of type "strin"."""
    return text


@server.tool()
def task_only() -> str:
    """Listed as running only as a task."""
    return "ran without a task"


@server.tool()
def task_maybe() -> str:
    """Listed as able to run as a task, or not."""
    return "ran without a task"


_serialize = methods.serialize_server_result


def _listed_as_other_servers_do(method: str, version: str, data, **options):
    """The SDK sends what its own types allow; other servers list whatever they were written with."""
    dumped = _serialize(method, version, data, **options)
    if method == "tools/list":
        for tool in dumped["tools"]:
            if tool["name"] == "typo_schema":
                tool["inputSchema"]["properties"]["text"]["type"] = "strin"
            if tool["name"] in TASK_SUPPORT:
                tool["execution"] = {"taskSupport": TASK_SUPPORT[tool["name"]]}
    return dumped


methods.serialize_server_result = _listed_as_other_servers_do

if __name__ == "__main__":
    server.run()
