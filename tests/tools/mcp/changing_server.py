"""An MCP server whose prompts and resources change at runtime, over stdio: `add_entries(name)`
registers a prompt `<name>` and a resource `changing://<name>`, then tells the client both lists
changed (on a 2026-07-28 client's subscriptions/listen stream, and as plain notifications for
handshake-era clients). `touch(uri)` says that resource changed (on the listen stream of the
2026-07-28 clients that subscribed to it there)."""

from __future__ import annotations

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.prompts.base import Prompt
from mcp.server.mcpserver.resources import TextResource

server = MCPServer("changing")


@server.resource("changing://first", name="first", mime_type="text/plain")
def first() -> str:
    return "The first resource."


@server.prompt(description="The prompt there is from the start.")
def opening() -> str:
    return "Open."


@server.tool()
async def add_entries(name: str, ctx: Context) -> str:
    """Add a prompt `name` and a resource `changing://<name>`, and say both lists changed."""

    def prompt() -> str:
        return f"The {name} prompt, added at runtime."

    server.add_prompt(Prompt.from_function(prompt, name=name, description="Added at runtime."))
    server.add_resource(
        TextResource(uri=f"changing://{name}", name=name, text=f"The {name} resource, added at runtime.")
    )
    await ctx.notify_prompts_changed()  # 2026-07-28 clients: on their subscriptions/listen stream
    await ctx.notify_resources_changed()
    await ctx.session.send_prompt_list_changed()  # handshake-era clients: plain notifications
    await ctx.session.send_resource_list_changed()
    return "added"


@server.tool()
async def touch(uri: str, ctx: Context) -> str:
    """Say the resource `uri` changed."""
    await ctx.notify_resource_updated(uri)
    return "touched"


if __name__ == "__main__":
    server.run()
