"""What a turn's context carries of the session's documents: the current version of each, the most
recently changed first, whole while they fit the share of the context budget they may take; a longer
one as its outline (its headings) and a pointer to `document_read`. So the text the user edited is
the text the next turn works on."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ..models import DocumentVersion

HEADER = (
    "\n\n# Documents of this session\n"
    "The current version of each document kept beside the chat, the most recently changed first. The user "
    "may have edited them: work on these texts, and revise a document with document_write and its documentId."
)
OUTLINE_NOTE = "[Only its outline fits here: call document_read with this documentId for the whole text.]"
LEFT_OUT_NOTE = "[Left out for room: call document_read with this documentId to read it.]"


def outline(content: str) -> str:
    """The document's headings, one a line (its Markdown `#` lines outside code blocks)."""
    lines: list[str] = []
    fenced = False
    for line in content.splitlines():
        if line.lstrip().startswith(("```", "~~~")):
            fenced = not fenced
        elif not fenced and line.startswith("#"):
            lines.append(line.rstrip())
    return "\n".join(lines) or "(no headings)"


def _open_tag(version: DocumentVersion) -> str:
    by = "the user" if version.author == DocumentVersion.Author.USER else "the agent"
    title = version.title.replace('"', "'")
    return f'<document id="{version.document_id}" title="{title}" version="{version.number}" by="{by}">'


def documents_block(versions: Sequence[DocumentVersion], count: Callable[[str], int], budget: int) -> str:
    """The documents' part of the system prompt ("" without documents), within `budget` tokens as
    `count` measures them: whole documents while they fit, then outlines, then only their ids."""
    if not versions:
        return ""
    parts = [HEADER]
    used = count(HEADER)
    for version in versions:
        tag = _open_tag(version)
        for body in (version.content, f"{OUTLINE_NOTE}\n{outline(version.content)}", LEFT_OUT_NOTE):
            part = f"\n\n{tag}\n{body}\n</document>"
            cost = count(part)
            if used + cost <= budget or body == LEFT_OUT_NOTE:
                parts.append(part)
                used += cost
                break
    return "".join(parts)
