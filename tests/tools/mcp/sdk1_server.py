"""An MCP server on the mcp SDK 1.30 (protocol 2025-11-25), run by the Python of its own virtualenv
(tests/helpers/sdk1.py makes it): over stdio, or over streamable HTTP with `sdk1_server.py --http
<fd>` (serving on the listening socket inherited as file descriptor <fd>). It imports nothing of
Aptix: it runs on another SDK.

- `ask(then_sleep)`: asks the user with an ordinary `elicitation/create` request during the call (a
  form with a name), waits `then_sleep` seconds and says what was answered.
- `research(topic, stages, stage_seconds)`: runs only as a task (`taskSupport: "required"`), with
  the SDK's default task handlers: the task's id is scoped to the session that created it (another
  session asking for it hears "Task not found"). A status message per stage, then a report.
- `pid()`: the server's process id.
- A resource `note://today` whose text `edit_note(text)` changes, telling the sessions subscribed to
  it (`notifications/resources/updated`; the server declares `resources.subscribe`);
  `subscriptions()` lists the URIs subscribed to now. A URI template `note://day/{day}` whose `day`
  the server completes (`completion/complete`).
- `link()`: fails with URLElicitationRequired (-32042), naming a page.
- `summarise(text)`: asks the client's model (`sampling/createMessage`, a system prompt and the text
  as the user's message, at most 60 tokens) and answers with what the model wrote, or the error.
"""

from __future__ import annotations

import os
import socket
import sys
import warnings

import anyio
from mcp import types
from mcp.server.experimental.task_context import ServerTaskContext
from mcp.server.lowlevel import Server
from mcp.shared.exceptions import UrlElicitationRequiredError

server = Server("sdk1")
with warnings.catch_warnings():  # "deprecated": 1.30 is the SDK of servers that still run them
    warnings.simplefilter("ignore", DeprecationWarning)
    server.experimental.enable_tasks()

NOTE = "note://today"
note = {"text": "Buy milk."}
subscribed: dict[str, object] = {}  # uri → the session that subscribed (one client per test process)


@server.list_resources()
async def list_resources() -> list[types.Resource]:
    return [types.Resource(uri=NOTE, name="today", mimeType="text/plain")]


DAYS = ("monday", "tuesday", "wednesday", "thursday", "friday")


@server.list_resource_templates()
async def list_resource_templates() -> list[types.ResourceTemplate]:
    return [types.ResourceTemplate(uriTemplate="note://day/{day}", name="day")]


@server.completion()
async def complete(ref, argument, context) -> types.Completion | None:
    """The template's `day`, starting with what was typed (declares `completions`)."""
    if isinstance(ref, types.ResourceTemplateReference) and argument.name == "day":
        return types.Completion(values=[d for d in DAYS if d.startswith(argument.value.lower())], hasMore=False)
    return None


@server.read_resource()
async def read_resource(uri) -> str:
    if str(uri) != NOTE:
        raise ValueError(f"no resource {uri}")
    return note["text"]


@server.subscribe_resource()
async def subscribe_resource(uri) -> None:
    subscribed[str(uri)] = server.request_context.session


@server.unsubscribe_resource()
async def unsubscribe_resource(uri) -> None:
    subscribed.pop(str(uri), None)


_capabilities = server.get_capabilities


def _with_subscribe(*args, **kwargs) -> types.ServerCapabilities:
    """1.30's low-level server always declares `subscribe: false`; this one serves subscriptions."""
    capabilities = _capabilities(*args, **kwargs)
    if capabilities.resources is not None:
        capabilities.resources.subscribe = True
    return capabilities


server.get_capabilities = _with_subscribe  # type: ignore[method-assign]

NAME = {"type": "object", "properties": {"name": {"type": "string", "title": "Name"}}, "required": ["name"]}
READ_ONLY = types.ToolAnnotations(readOnlyHint=True)  # runs without an approval first


@server.list_tools()
async def list_tools() -> list[types.Tool]:
    research = {
        "type": "object",
        "properties": {
            "topic": {"type": "string"},
            "stages": {"type": "integer", "default": 3},
            "stage_seconds": {"type": "number", "default": 0.2},
        },
        "required": ["topic"],
    }
    return [
        types.Tool(
            name="ask",
            description="Ask the user for a name, then (after `then_sleep` seconds) say what was answered.",
            inputSchema={"type": "object", "properties": {"then_sleep": {"type": "number", "default": 0}}},
            annotations=READ_ONLY,
        ),
        types.Tool(
            name="research",
            description="Research a topic in stages (a task).",
            inputSchema=research,
            annotations=READ_ONLY,
            execution=types.ToolExecution(taskSupport="required"),
        ),
        types.Tool(name="pid", description="The server's process id.", inputSchema={"type": "object"}),
        types.Tool(
            name="edit_note",
            description="Change the note (note://today).",
            inputSchema={"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
        ),
        types.Tool(name="subscriptions", description="The URIs subscribed to.", inputSchema={"type": "object"}),
        types.Tool(
            name="link", description="Fails: the user must link an account first.", inputSchema={"type": "object"}
        ),
        types.Tool(
            name="summarise",
            description="Summarise a text with the client's model.",
            inputSchema={"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
            annotations=READ_ONLY,
        ),
    ]


def _text(text: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)])


@server.call_tool()
async def call_tool(name: str, arguments: dict) -> types.CallToolResult | types.CreateTaskResult:
    ctx = server.request_context
    if name == "pid":
        return _text(str(os.getpid()))
    if name == "edit_note":
        note["text"] = str(arguments["text"])
        if (session := subscribed.get(NOTE)) is not None:
            await session.send_resource_updated(NOTE)
        return _text("edited")
    if name == "subscriptions":
        return _text(",".join(sorted(subscribed)))
    if name == "link":
        page = types.ElicitRequestURLParams(
            mode="url", message="Link your account", url="https://bank.example/link/sdk1", elicitationId="link-sdk1"
        )
        raise UrlElicitationRequiredError([page])
    if name == "summarise":
        message = types.SamplingMessage(role="user", content=types.TextContent(type="text", text=arguments["text"]))
        try:
            made = await ctx.session.create_message(
                [message], max_tokens=60, system_prompt="Summarise in one line.", related_request_id=ctx.request_id
            )
        except Exception as exc:  # noqa: BLE001 - the refusal is what the test reads
            return _text(f"refused: {exc}")
        return _text(f"{made.model} wrote: {made.content.text}")
    if name == "ask":
        got = await ctx.session.elicit_form("What is your name?", NAME, related_request_id=ctx.request_id)
        await anyio.sleep(float(arguments.get("then_sleep", 0)))
        return _text(f"{got.action} {got.content}")
    if name == "research":
        topic, stages = str(arguments["topic"]), int(arguments.get("stages", 3))
        stage_seconds = float(arguments.get("stage_seconds", 0.2))

        async def work(task: ServerTaskContext) -> types.CallToolResult:
            for stage in range(1, stages + 1):
                await task.update_status(f"Stage {stage} of {stages}: reading about {topic}")
                await anyio.sleep(stage_seconds)
            return _text(f"Report on {topic}: {stages} stages done")

        return await ctx.experimental.run_task(work)
    raise ValueError(f"unknown tool {name}")


def main() -> None:
    if sys.argv[1:2] == ["--http"]:
        import contextlib

        import uvicorn
        from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
        from starlette.applications import Starlette
        from starlette.routing import Route

        manager = StreamableHTTPSessionManager(app=server)

        @contextlib.asynccontextmanager
        async def lifespan(app):
            async with manager.run():
                yield

        class Endpoint:  # an ASGI app (a plain function would be taken for a request handler)
            async def __call__(self, scope, receive, send) -> None:
                await manager.handle_request(scope, receive, send)

        app = Starlette(routes=[Route("/mcp", endpoint=Endpoint())], lifespan=lifespan)
        listener = socket.socket(fileno=int(sys.argv[2]))
        uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on")).run(sockets=[listener])
        return

    from mcp.server.stdio import stdio_server

    async def run() -> None:
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())

    anyio.run(run)


if __name__ == "__main__":
    main()
