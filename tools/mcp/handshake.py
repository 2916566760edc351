"""What one MCP session agreed on: the protocol version, the capabilities the server declared and
those Aptix declared, and the server's `instructions` (text a server gives its clients on how to use
its tools). The supervisor records it in the server's status (admin page, `manage.py mcp_status`);
the instructions of the servers a turn offers go into its system prompt (`instructions_prompt`).

A server's instructions are Markdown of its own, often with `# Title` and `## Tools` headings, which
would sit among (and read as) the prompt's `## <server>` blocks: every heading in them (`#` lines
and `===`/`---` underlined ones, not those in code fences) is demoted by two levels, so a server's
`#` becomes `###`, below its `## <server>` block (`demote_headings`)."""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

logger = logging.getLogger("aptix.mcp")

INSTRUCTIONS_HEADING = "# MCP server instructions"
INSTRUCTIONS_INTRO = "What each MCP server whose tools you have says about using them:"
SERVER_BLOCK_LEVEL = 2  # "## <server>"
FENCE_RE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
ATX_HEADING_RE = re.compile(r"^( {0,3})(#{1,6})(?=[ \t]|$)")
SETEXT_UNDERLINE_RE = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
NOT_PARAGRAPH_RE = re.compile(r"^\s*$|^ {0,3}(?:[-+*>]|\d+[.)]|#{1,6}(?:[ \t]|$))")


@dataclass(frozen=True)
class Handshake:
    """The capability objects are as sent (camelCase keys, empty ones kept:
    `"logging": {}` declares logging)."""

    protocol_version: str | None = None
    server_capabilities: dict[str, Any] = field(default_factory=dict, hash=False)
    client_capabilities: dict[str, Any] = field(default_factory=dict, hash=False)
    instructions: str = ""

    def server_summary(self) -> str:
        return summary(self.server_capabilities)

    def client_summary(self) -> str:
        return summary(self.client_capabilities)


def summary(capabilities: dict[str, Any]) -> str:
    """'tools (listChanged), resources (subscribe, listChanged), logging' — or 'none'."""
    parts = []
    for name, detail in capabilities.items():
        flags = [key for key, value in detail.items() if value not in (False, None)] if isinstance(detail, dict) else []
        parts.append(f"{name} ({', '.join(flags)})" if flags else name)
    return ", ".join(parts) or "none"


def handshake_of(client: Any) -> Handshake:
    """Read from a connected SDK `Client`. What Aptix declared is what the SDK's session sends for the
    negotiated version (it derives it from the callbacks given): read back so it cannot drift."""
    version = client.protocol_version
    server = client.server_capabilities.model_dump(by_alias=True, mode="json", exclude_none=True)
    try:
        declared = client.session._build_capabilities(version)  # the SDK's own capability ad
        ours = declared.model_dump(by_alias=True, mode="json", exclude_none=True)
    except Exception:  # an SDK without it: shown as unknown rather than failing the start
        logger.debug("MCP: the SDK's client capabilities could not be read", exc_info=True)
        ours = {"unknown": {}}
    instructions = client.instructions or ""
    return Handshake(version, server_capabilities=server, client_capabilities=ours, instructions=instructions)


def instructions_prompt(servers: Iterable[tuple[str, str]], limit: int) -> str:
    """The system prompt's section for `(server, instructions)` pairs, each server's text cut to
    `limit` characters (APTIX_MCP_INSTRUCTIONS_CHARS) with a note saying so; '' when none has any
    (or `limit` is 0)."""
    blocks = []
    for name, given in servers:
        text = given.strip()
        if not text or limit <= 0:
            continue
        if len(text) > limit:
            text = text[:limit].rstrip() + f"… (cut to {limit} characters)"
        blocks.append(f"{'#' * SERVER_BLOCK_LEVEL} {name}\n{demote_headings(text, SERVER_BLOCK_LEVEL)}")
    if not blocks:
        return ""
    return "\n\n".join([INSTRUCTIONS_HEADING, INSTRUCTIONS_INTRO, *blocks])


def demote_headings(text: str, by: int) -> str:
    """`text` (Markdown) with each heading `by` levels deeper (at most `######`), those in code
    fences left alone; an underlined (setext) heading becomes a `#` one."""
    out: list[str] = []
    fence = ""  # the opening fence while inside a code block
    paragraph = False  # whether the line before is paragraph text (which an underline makes a heading)
    for line in text.split("\n"):
        opening = FENCE_RE.match(line)
        if fence:
            if opening and opening.group(1)[0] == fence[0] and len(opening.group(1)) >= len(fence):
                fence = ""
            out.append(line)
            continue
        if opening:
            fence, paragraph = opening.group(1), False
            out.append(line)
            continue
        atx = ATX_HEADING_RE.match(line)
        underline = SETEXT_UNDERLINE_RE.match(line)
        if atx:
            level = min(6, len(atx.group(2)) + by)
            out.append(atx.group(1) + "#" * level + line[atx.end() :])
            paragraph = False
        elif underline and paragraph:
            level = min(6, (1 if underline.group(1)[0] == "=" else 2) + by)
            out[-1] = f"{'#' * level} {out[-1].strip()}"
            paragraph = False
        else:
            out.append(line)
            paragraph = not NOT_PARAGRAPH_RE.match(line)
    return "\n".join(out)
