"""An MCP server with `instructions` (from GUIDE_INSTRUCTIONS, else a default), one tool, a few
resources (a text, an HTML page, an image, a URI template), two prompts (one with a required and an
optional argument, one a short exchange) and completions of their arguments, over stdio: the
instructions, handshake, resource, prompt and completion tests start it."""

from __future__ import annotations

import os
import struct
import zlib

import mcp_types as types
from mcp.server.mcpserver import MCPServer

DEFAULT = "Always greet politely. Call greet before anything else."

server = MCPServer("guide", instructions=os.environ.get("GUIDE_INSTRUCTIONS", DEFAULT))


@server.tool()
def greet(name: str) -> str:
    """Greet someone."""
    return f"Hello, {name}!"


@server.tool(annotations=types.ToolAnnotations(read_only_hint=True))
def link() -> list[types.ContentBlock]:
    """Point to the readme (a resource link)."""
    return [types.ResourceLink(type="resource_link", uri="guide://readme", name="readme", mime_type="text/markdown")]


@server.resource("guide://readme", name="readme", description="How to use the guide.", mime_type="text/markdown")
def readme() -> str:
    return "# Guide\nGreet people by name."


@server.resource("guide://page.html", name="page", mime_type="text/html")
def page() -> str:
    return "<script>alert('never run')</script><p>A page.</p>"


@server.resource("guide://pixel.png", name="pixel", mime_type="image/png")
def pixel() -> bytes:
    return PIXEL


@server.resource("guide://people/{name}", name="person", description="One person's card.")
def person(name: str) -> str:
    return f"{name} likes being greeted."


@server.prompt(title="Greeting", description="Write a greeting for someone.")
def greeting(name: str, tone: str = "warm") -> str:
    """`name` is required, `tone` optional (the server's default is "warm")."""
    return f"Write a {tone} greeting for {name}."


@server.prompt(name="house-style", title="House style", description="Answer in the house style.")
def house_style() -> list[dict]:
    return [
        {"role": "user", "content": "How do we greet people?"},
        {"role": "assistant", "content": "By name, politely."},
        {"role": "user", "content": {"type": "resource", "resource": {"uri": "guide://readme", "text": "# Guide"}}},
    ]


PEOPLE = ("Ada", "Alan", "Barbara", "Grace")
TONES = ("formal", "friendly", "warm")


async def suggest(ref, argument, context) -> types.Completion | None:
    """The greeting's `name` and `tone` and the person template's `name`, starting with what was typed,
    two at most; a `tone` with the name "Grace" already given is only "formal" (the context counts).
    Not offered (no `completions` capability) with GUIDE_COMPLETIONS=off."""
    if isinstance(ref, types.PromptReference) and ref.name == "greeting":
        choices = {"name": PEOPLE, "tone": TONES}.get(argument.name, ())
        given = (context.arguments or {}) if context is not None else {}
        if argument.name == "tone" and given.get("name") == "Grace":
            choices = ("formal",)
    elif isinstance(ref, types.ResourceTemplateReference) and argument.name == "name":
        choices = PEOPLE
    else:
        return None
    values = [value for value in choices if value.lower().startswith(argument.value.lower())]
    return types.Completion(values=values[:2], total=len(values), has_more=len(values) > 2)


if os.environ.get("GUIDE_COMPLETIONS") != "off":
    server.completion()(suggest)


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


# A 1x1 red PNG, checksums and all (a browser shows it; Pillow verifies it).
PIXEL = (
    b"\x89PNG\r\n\x1a\n"
    + _chunk(b"IHDR", struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0))
    + _chunk(b"IDAT", zlib.compress(b"\x00\xff\x00\x00"))
    + _chunk(b"IEND", b"")
)


if __name__ == "__main__":
    server.run()
