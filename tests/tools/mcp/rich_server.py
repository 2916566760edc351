"""A stdio MCP server with rich results and progress, for the host tests: `python rich_server.py`.

`gallery` answers with every kind of content block (a PNG, an SVG claiming to be an image, audio, an
https and a javascript: resource link, an embedded text and an embedded blob resource); `steps`
reports progress between pauses each shorter than the call timeout (together longer);
`stalls` reports once and then goes silent; `endless` reports for ever; `chatty` reports a
thousand times at once and then answers."""

from __future__ import annotations

import asyncio
import base64
import io

import mcp_types as types
from mcp.server.mcpserver import Context, MCPServer
from PIL import Image

server = MCPServer("rich")
READ_ONLY = types.ToolAnnotations(read_only_hint=True)  # runs without asking (agents/approvals.py)

SVG = b'<svg xmlns="http://www.w3.org/2000/svg" onload="alert(1)"><circle r="4"/></svg>'
AUDIO = b"RIFF\x24\x00\x00\x00WAVEfmt " + bytes(28)


def png(color: str = "red", size: tuple[int, int] = (40, 30)) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", size, color).save(buffer, format="PNG")
    return buffer.getvalue()


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


@server.tool(annotations=READ_ONLY)
def gallery() -> list:
    """Every kind of content block at once."""
    return [
        types.TextContent(type="text", text="Here is the chart."),
        types.ImageContent(type="image", data=b64(png()), mime_type="image/png"),
        types.ImageContent(type="image", data=b64(SVG), mime_type="image/svg+xml"),
        types.AudioContent(type="audio", data=b64(AUDIO), mime_type="audio/wav"),
        types.ResourceLink(
            type="resource_link", name="report", uri="https://example.com/report.pdf", mime_type="application/pdf"
        ),
        types.ResourceLink(type="resource_link", name="trap", uri="javascript:alert(1)"),
        types.EmbeddedResource(
            type="resource",
            resource=types.TextResourceContents(
                uri="file:///srv/notes/readme.md", mime_type="text/markdown", text="# Notes\nline two"
            ),
        ),
        types.EmbeddedResource(
            type="resource",
            resource=types.BlobResourceContents(
                uri="file:///srv/data/table.bin", mime_type="application/octet-stream", blob=b64(b"\x00\x01\x02")
            ),
        ),
    ]


@server.tool(annotations=READ_ONLY)
async def steps(count: int, pause: float, ctx: Context) -> str:
    """Report progress `count` times, `pause` seconds apart."""
    for step in range(1, count + 1):
        await asyncio.sleep(pause)
        await ctx.report_progress(step, count, f"fetching part {step}")
    return f"done after {count} steps"


@server.tool(annotations=READ_ONLY)
async def stalls(ctx: Context) -> str:
    """Report once, then never again."""
    await ctx.report_progress(1, 10, "started")
    await asyncio.sleep(3600)
    return "never"


@server.tool(annotations=READ_ONLY)
async def endless(pause: float, ctx: Context) -> str:
    """Report progress for ever."""
    step = 0
    while True:
        step += 1
        await ctx.report_progress(step, None, "still going")
        await asyncio.sleep(pause)


@server.tool(annotations=READ_ONLY)
async def chatty(count: int, ctx: Context) -> str:
    """Report `count` times as fast as possible, then answer."""
    for step in range(1, count + 1):
        await ctx.report_progress(step, count, f"item {step}")
    return "chatted"


if __name__ == "__main__":
    server.run()
