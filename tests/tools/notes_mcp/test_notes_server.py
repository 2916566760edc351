"""The demo notes MCP server as a real subprocess over stdio: two tools, one that writes (so Aptix asks
before it runs) and one read-only; notes land in the file one line each; bad text is a tool error."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client

from tools.notes_mcp import server as notes_server

REPO_DIR = Path(__file__).resolve().parents[3]
NOTE_LINE = re.compile(r"- \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[+-]\d\d:\d\d (?P<text>.*)")


def text(result) -> str:
    return "".join(block.text for block in result.content)


def params(path: Path) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "tools.notes_mcp", str(path)],
        cwd=str(REPO_DIR),
        env={"PYTHONPATH": str(REPO_DIR)},
    )


async def test_two_tools_one_writes_one_reads_and_the_notes_land_in_the_file(tmp_path):
    path = tmp_path / "nested" / "notes.md"
    async with stdio_client(params(path)) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        tools = {t.name: t for t in (await session.list_tools()).tools}
        assert sorted(tools) == ["add_note", "list_notes"]
        add = tools["add_note"].annotations
        assert (add.read_only_hint, add.destructive_hint, add.idempotent_hint, add.open_world_hint) == (
            False,
            False,
            False,
            False,
        )
        assert tools["list_notes"].annotations.read_only_hint is True
        assert tools["add_note"].input_schema["required"] == ["text"]

        empty = await session.call_tool("list_notes", {})
        assert (empty.is_error, text(empty)) == (False, "No notes yet.")
        assert not path.exists()  # nothing is created until a note is added

        first = await session.call_tool("add_note", {"text": "Buy milk"})
        assert (first.is_error, text(first)) == (False, "Added note 1.")
        second = await session.call_tool("add_note", {"text": "  Call\nBob  "})
        assert (second.is_error, text(second)) == (False, "Added note 2.")

        lines = path.read_text().splitlines()
        assert [NOTE_LINE.fullmatch(line)["text"] for line in lines] == ["Buy milk", "Call Bob"]
        listed = await session.call_tool("list_notes", {})
        assert (listed.is_error, text(listed)) == (False, "\n".join(lines))


@pytest.mark.parametrize(
    ("note", "message"),
    [
        ("", "The note is empty: give the text to add."),
        (" \n\t ", "The note is empty: give the text to add."),
        ("x" * 2001, "The note is too long: 2001 characters, at most 2000."),
    ],
)
async def test_empty_or_too_long_text_is_a_tool_error_and_writes_nothing(tmp_path, note, message):
    path = tmp_path / "notes.md"
    async with stdio_client(params(path)) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        result = await session.call_tool("add_note", {"text": note})
        assert result.is_error
        assert message in text(result)
        assert text(await session.call_tool("list_notes", {})) == "No notes yet."
    assert not path.exists()


def test_a_note_of_exactly_the_limit_is_kept_and_counted_after_other_lines(tmp_path):
    path = tmp_path / "notes.md"
    path.write_text("# My notes\n- 2025-01-01T09:00:00+00:00 older note")  # no final newline
    notes = notes_server.NotesFile(path)
    assert notes.add(notes_server.note_text("y" * 2000)) == 2
    lines = path.read_text().splitlines()
    assert lines[:2] == ["# My notes", "- 2025-01-01T09:00:00+00:00 older note"]
    assert NOTE_LINE.fullmatch(lines[2])["text"] == "y" * 2000
    assert notes.notes() == lines[1:]


def _python(*args: str) -> subprocess.CompletedProcess:
    env = {"PATH": os.environ["PATH"], "PYTHONPATH": str(REPO_DIR)}  # no Django settings
    return subprocess.run(
        [sys.executable, *args], cwd=REPO_DIR, env=env, capture_output=True, text=True, timeout=60, check=False
    )


def test_bad_arguments_stop_the_server_with_a_clear_message(tmp_path):
    done = _python("-m", "tools.notes_mcp")
    assert (done.returncode, done.stdout, done.stderr) == (2, "", notes_server.USAGE + "\n")
    done = _python("-m", "tools.notes_mcp", str(tmp_path))
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr == f"notes_server: {tmp_path} is a directory, not a notes file\n"


def test_the_server_does_not_import_django():
    done = _python(
        "-c", "import sys, tools.notes_mcp.server; print('django' in {m.split('.')[0] for m in sys.modules})"
    )
    assert done.stdout == "False\n", done.stderr


@pytest.mark.parametrize("note", ["before\x00after", "bell\x07", "escape\x1b[31m"])
def test_control_characters_are_refused(tmp_path, note):
    with pytest.raises(notes_server.ToolError, match=r"The note contains a control character \(U\+00"):
        notes_server.note_text(note)


def test_a_tab_is_a_space():
    assert notes_server.note_text("a\tb") == "a b"


def test_a_symbolic_link_is_not_followed(tmp_path):
    elsewhere = tmp_path / "elsewhere.txt"
    elsewhere.write_text("precious\n")
    link = tmp_path / "notes.md"
    link.symlink_to(elsewhere)
    notes = notes_server.NotesFile(link)
    with pytest.raises(notes_server.NotesFileError, match="is a symbolic link"):
        notes.add("x")
    with pytest.raises(notes_server.NotesFileError, match="is a symbolic link"):
        notes.notes()
    assert elsewhere.read_text() == "precious\n"
    done = _python("-m", "tools.notes_mcp", str(link))
    assert (done.returncode, done.stderr) == (
        1,
        f"notes_server: {link} is a symbolic link; give the notes file itself\n",
    )


def test_a_pipe_or_device_is_refused_instead_of_blocking(tmp_path):
    fifo = tmp_path / "notes.md"
    os.mkfifo(fifo)
    notes = notes_server.NotesFile(fifo)  # a FIFO with no reader: opening it to write would block for good
    with pytest.raises(notes_server.NotesFileError, match="is not a regular file"):
        notes.add("x")
    with pytest.raises(notes_server.NotesFileError, match="is not a regular file"):
        notes.notes()
    done = _python("-m", "tools.notes_mcp", "/dev/null")
    assert (done.returncode, done.stderr) == (
        1,
        "notes_server: /dev/null is not a regular file; give the notes file itself\n",
    )
    done = _python("-m", "tools.notes_mcp", "/dev/stdout")  # the server's own MCP channel
    assert (done.returncode, done.stderr) == (
        1,
        "notes_server: /dev/stdout is a symbolic link; give the notes file itself\n",
    )


async def test_a_link_put_in_place_after_start_is_a_tool_error(tmp_path):
    path = tmp_path / "notes.md"
    async with stdio_client(params(path)) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        (tmp_path / "target").write_text("")
        path.symlink_to(tmp_path / "target")
        result = await session.call_tool("add_note", {"text": "hello"})
        assert result.is_error
        assert text(result).endswith(
            f"Cannot use the notes file: {path} is a symbolic link; give the notes file itself"
        )
    assert (tmp_path / "target").read_text() == ""


def test_a_relative_path_must_stay_in_the_working_directory(tmp_path):
    done = _python("-m", "tools.notes_mcp", "../outside/notes.md")
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr == "notes_server: ../outside/notes.md leaves the working directory; give an absolute path\n"
    assert not (REPO_DIR.parent / "outside").exists()
