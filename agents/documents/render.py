"""A document's versions as people read them outside the Markdown view: the diff between two versions
(difflib, line by line) and the DOCX download (python-docx: headings, lists, code and paragraphs)."""

from __future__ import annotations

import difflib
import io
import re
from dataclasses import dataclass

HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
BULLET = re.compile(r"^\s*[-*+]\s+(.*)$")
NUMBERED = re.compile(r"^\s*\d+[.)]\s+(.*)$")
INLINE_MARKS = re.compile(r"(\*\*|__|`)")


@dataclass(frozen=True)
class DiffLine:
    kind: str  # "add", "del", "ctx" or "hunk"
    text: str


def diff_lines(before: str, after: str, *, context: int = 3) -> list[DiffLine]:
    """What changed from `before` to `after`: added, deleted and a few unchanged lines around them,
    each hunk headed by its line numbers. Empty when the texts are the same."""
    lines: list[DiffLine] = []
    diff = difflib.unified_diff(before.splitlines(), after.splitlines(), lineterm="", n=context)
    for line in diff:
        if line.startswith(("---", "+++")) and not lines:
            continue  # the file header
        kind = {"+": "add", "-": "del", "@": "hunk"}.get(line[:1], "ctx")
        lines.append(DiffLine(kind, line[1:] if kind in ("add", "del", "ctx") else line))
    return lines


def _plain(text: str) -> str:
    """Inline Markdown marks dropped (bold, code): a DOCX run shows the words."""
    return INLINE_MARKS.sub("", text)


# What XML 1.0 cannot hold (a DOCX is XML): the C0 controls but tab, newline and carriage return, and
# the two non-characters; python-docx refuses them with a ValueError.
NOT_IN_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


def xml_safe(text: str) -> str:
    """`text` without the characters a DOCX cannot hold (each becomes nothing: they show as nothing)."""
    return NOT_IN_XML.sub("", text)


def docx_bytes(title: str, content: str) -> bytes:
    """The document as a .docx file: Markdown headings become Word headings, lists list items, fenced
    code a monospaced paragraph, the rest paragraphs."""
    from docx import Document as WordDocument  # python-docx, imported when a download asks for it
    from docx.shared import Pt

    title, content = xml_safe(title), xml_safe(content)
    word = WordDocument()
    word.core_properties.title = title
    code: list[str] | None = None
    for line in content.splitlines():
        if line.lstrip().startswith(("```", "~~~")):
            if code is None:
                code = []
            else:
                paragraph = word.add_paragraph()
                run = paragraph.add_run("\n".join(code))
                run.font.name = "Courier New"
                run.font.size = Pt(9)
                code = None
            continue
        if code is not None:
            code.append(line)
        elif match := HEADING.match(line):
            word.add_heading(_plain(match.group(2)), level=min(len(match.group(1)), 4))
        elif match := BULLET.match(line):
            word.add_paragraph(_plain(match.group(1)), style="List Bullet")
        elif match := NUMBERED.match(line):
            word.add_paragraph(_plain(match.group(1)), style="List Number")
        elif line.strip():
            word.add_paragraph(_plain(line.strip()))
    if code:  # a fence never closed: its lines still go out
        word.add_paragraph("\n".join(code))
    out = io.BytesIO()
    word.save(out)
    return out.getvalue()
