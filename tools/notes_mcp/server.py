"""A demo notes MCP server over stdio: `python -m tools.notes_mcp <path-to-notes-file>` (the command
in the shipped mcp.json, with var/notes.md relative to the working directory).

Tools:
    add_note(text)   appends one line "- <ISO timestamp> <text>" to the file (creating the file and its
                     folders) and answers "Added note N."; annotated as writing (readOnlyHint false,
                     not destructive, not idempotent, closed world), so Aptix asks before it runs.
    list_notes()     the notes, one per line, or "No notes yet."; annotated read-only.

Empty text and text over MAX_NOTE_CHARS characters are tool errors (is_error) naming the problem.
Line breaks inside a note become spaces: one note is one line. Several Aptix processes may each run
this server on the same file, so a write holds an exclusive lock on it.

No Django here: this runs as its own process and must start fast.
"""

from __future__ import annotations

import fcntl
import sys
from collections.abc import Callable, Sequence
from datetime import datetime
from pathlib import Path
from typing import Annotated, Any, TypeVar

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import ToolAnnotations
from pydantic import Field

USAGE = "usage: python -m tools.notes_mcp <path/to/notes.md>"
MAX_NOTE_CHARS = 2000
NO_NOTES = "No notes yet."
NOTE_PREFIX = "- "
READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False)
WRITES = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False)

T = TypeVar("T")
# Argument types live at module level: MCPServer evaluates the (string) annotations in this module.
TextArg = Annotated[str, Field(description=f"The note, one line of at most {MAX_NOTE_CHARS} characters.")]


def note_text(text: str) -> str:
    """The note as it is stored: one line, trimmed. Raises ToolError when it is empty or too long."""
    line = " ".join(part.strip() for part in text.splitlines()).strip()
    if not line:
        raise ToolError("The note is empty: give the text to add.")
    if len(line) > MAX_NOTE_CHARS:
        raise ToolError(f"The note is too long: {len(line)} characters, at most {MAX_NOTE_CHARS}.")
    return line


class NotesFile:
    """The notes file: lines "- <timestamp> <text>"; other lines (a heading someone added) are kept
    and not counted."""

    def __init__(self, path: Path):
        self.path = path

    def add(self, text: str) -> int:
        """Append one note; the number of notes in the file afterwards."""
        stamp = datetime.now().astimezone().isoformat(timespec="seconds")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("a+", encoding="utf-8") as f:
            fcntl.flock(f, fcntl.LOCK_EX)  # released when the file closes
            f.seek(0)
            content = f.read()
            if content and not content.endswith("\n"):
                f.write("\n")
            f.write(f"{NOTE_PREFIX}{stamp} {text}\n")
            return len(self._notes(content)) + 1

    def notes(self) -> list[str]:
        try:
            content = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return []
        return self._notes(content)

    @staticmethod
    def _notes(content: str) -> list[str]:
        return [line for line in content.splitlines() if line.startswith(NOTE_PREFIX)]


def build_server(notes: NotesFile) -> MCPServer:
    """The MCP server over one notes file. Calls run on a worker thread, one at a time."""
    server = MCPServer(
        "aptix-notes",
        log_level="WARNING",
        instructions=(
            "A notes file. list_notes reads the notes; add_note appends one (it writes, so the user may "
            "be asked to approve it first)."
        ),
    )
    lock = anyio.Lock()

    async def call(fn: Callable[..., T], *args: Any) -> T:
        async with lock:
            try:
                return await anyio.to_thread.run_sync(fn, *args)
            except OSError as exc:
                raise ToolError(f"Cannot use the notes file {notes.path}: {exc.strerror or exc}") from None

    @server.tool(annotations=WRITES, structured_output=False)
    async def add_note(text: TextArg) -> str:
        """Append one note (a single line, stamped with the current time) to the notes file."""
        count = await call(notes.add, note_text(text))
        return f"Added note {count}."

    @server.tool(annotations=READ_ONLY, structured_output=False)
    async def list_notes() -> str:
        """The notes in the notes file, oldest first, one per line with the time each was added."""
        lines = await call(notes.notes)
        return "\n".join(lines) if lines else NO_NOTES

    return server


def main(argv: Sequence[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else list(argv)
    if len(args) != 1 or not args[0].strip():
        sys.stderr.write(USAGE + "\n")
        return 2
    path = Path(args[0]).expanduser().absolute()  # relative to the working directory, fixed at start
    if path.is_dir():
        sys.stderr.write(f"notes_server: {path} is a directory, not a notes file\n")
        return 1
    build_server(NotesFile(path)).run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
