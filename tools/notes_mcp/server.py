"""A demo notes MCP server over stdio: `python -m tools.notes_mcp <path-to-notes-file>` (the command
in the shipped mcp.json, with var/notes.md relative to the working directory).

Tools:
    add_note(text)   appends one line "- <ISO timestamp> <text>" to the file (creating the file and its
                     folders) and answers "Added note N."; annotated as writing (readOnlyHint false,
                     not destructive, not idempotent, closed world), so Aptix asks before it runs.
    list_notes()     the notes, one per line, or "No notes yet."; annotated read-only.

Empty text, text over MAX_NOTE_CHARS characters and text with control characters (NUL among them)
are tool errors (is_error) naming the problem. Line breaks inside a note become spaces: one note is one
line. Several Aptix processes may each run this server on the same file, so a write holds an exclusive
lock on it. The notes file is only ever a regular file: a symbolic link is not followed (it could point
anywhere the server may write) and a device or pipe is refused (`/dev/stdout` is the server's own MCP
channel; opening a FIFO would block the server for good), at start and at every call.

No Django here: this runs as its own process and must start fast.
"""

from __future__ import annotations

import fcntl
import os
import stat
import sys
import unicodedata
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
    line = line.replace("\t", " ")
    if control := next((c for c in line if unicodedata.category(c) == "Cc"), None):
        raise ToolError(f"The note contains a control character (U+{ord(control):04X}): remove it.")
    return line


class NotesFileError(OSError):
    """The notes path is not a regular file this server may use (a link, a device, a pipe)."""


def open_notes(path: Path, *, write: bool) -> int:
    """A descriptor of the notes file (for reading, or reading and appending, created if need be), never
    opened through a symbolic link nor blocking (a FIFO would); anything but a regular file is refused."""
    mode = os.O_RDWR | os.O_APPEND | os.O_CREAT if write else os.O_RDONLY
    flags = mode | os.O_NOFOLLOW | os.O_NONBLOCK
    try:
        fd = os.open(path, flags, 0o644)
    except OSError as exc:
        if path.is_symlink():
            raise NotesFileError(f"{path} is a symbolic link; give the notes file itself") from exc
        raise
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise NotesFileError(f"{path} is not a regular file")
    os.set_blocking(fd, True)
    return fd


class NotesFile:
    """The notes file: lines "- <timestamp> <text>"; other lines (a heading someone added) are kept
    and not counted."""

    def __init__(self, path: Path):
        self.path = path

    def add(self, text: str) -> int:
        """Append one note; the number of notes in the file afterwards."""
        stamp = datetime.now().astimezone().isoformat(timespec="seconds")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(open_notes(self.path, write=True), "a+", encoding="utf-8") as f:
            fcntl.flock(f, fcntl.LOCK_EX)  # released when the file closes
            f.seek(0)
            content = f.read()
            if content and not content.endswith("\n"):
                f.write("\n")
            f.write(f"{NOTE_PREFIX}{stamp} {text}\n")
            return len(self._notes(content)) + 1

    def notes(self) -> list[str]:
        try:
            fd = open_notes(self.path, write=False)
        except FileNotFoundError:
            return []
        with open(fd, encoding="utf-8") as f:
            content = f.read()
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
            except NotesFileError as exc:
                raise ToolError(f"Cannot use the notes file: {exc}") from None
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
    given = Path(args[0]).expanduser()
    # A relative path is the working directory's (Aptix starts the server in the `cwd` its mcp.json
    # entry names, by default the config file's folder) and must stay inside it: `../../x` is no
    # notes file of this folder, and would write wherever the process happened to start.
    if not given.is_absolute() and ".." in given.parts:
        sys.stderr.write(f"notes_server: {given} leaves the working directory; give an absolute path\n")
        return 1
    path = given.absolute()  # fixed at start
    if path.is_dir():
        sys.stderr.write(f"notes_server: {path} is a directory, not a notes file\n")
        return 1
    if path.is_symlink() or (path.exists() and not path.is_file()):
        kind = "a symbolic link" if path.is_symlink() else "not a regular file"
        sys.stderr.write(f"notes_server: {path} is {kind}; give the notes file itself\n")
        return 1
    build_server(NotesFile(path)).run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
