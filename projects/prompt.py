"""A project's instructions as a section of its sessions' system prompt: fenced like the MCP servers'
instructions (a heading of its own, the project's text under a `##` heading with its own headings
pushed below it, so nothing in it can pose as a section of the prompt), cut to a budget."""

from __future__ import annotations

import re

PROJECT_HEADING = "# Project instructions"
PROJECT_INTRO = "This session belongs to a project; its members ask you to follow these instructions:"
BLOCK_LEVEL = 2  # "## <project name>"
FENCE_RE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
ATX_HEADING_RE = re.compile(r"^( {0,3})(#{1,6})(?=[ \t]|$)")


def demote(text: str, by: int) -> str:
    """`text` (Markdown) with each `#` heading `by` levels deeper (at most `######`), code fences left alone."""
    out: list[str] = []
    fence = ""
    for line in text.split("\n"):
        opening = FENCE_RE.match(line)
        if fence:
            if opening and opening.group(1)[0] == fence[0] and len(opening.group(1)) >= len(fence):
                fence = ""
        elif opening:
            fence = opening.group(1)
        elif atx := ATX_HEADING_RE.match(line):
            out.append(atx.group(1) + "#" * min(6, len(atx.group(2)) + by) + line[atx.end() :])
            continue
        out.append(line)
    return "\n".join(out)


def project_instructions_prompt(name: str, instructions: str, limit: int) -> str:
    """The system prompt's section for a project's `instructions`, cut to `limit` characters with a
    note saying so; '' when there are none (or `limit` is 0)."""
    text = (instructions or "").strip()
    if not text or limit <= 0:
        return ""
    if len(text) > limit:
        text = text[:limit].rstrip() + f"… (cut to {limit} characters)"
    return "\n\n".join([PROJECT_HEADING, PROJECT_INTRO, f"{'#' * BLOCK_LEVEL} {name}\n{demote(text, BLOCK_LEVEL)}"])
