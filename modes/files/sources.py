"""Where mode files come from and go to: a directory, a zip, loose uploaded files.

Which reader a file gets is decided by its name: `*.mode.md` is a mode file, `*.agent.md` and
`*.chatmode.md` a VS Code custom agent, a `.md` inside `.claude/agents/` a Claude Code subagent (a loose
uploaded `.md` that is neither is read as one too: an upload has no folder). Anything else is skipped.

A directory is read without recursing: `DIR/*.mode.md`, `DIR/*.agent.md`, `DIR/.github/agents/*.agent.md`,
`DIR/.claude/agents/*.md`, and `DIR/*.md` when DIR itself is a `.claude/agents` folder.

A zip is read in memory, never extracted: an entry whose path leaves the archive (absolute, `..`, a drive
or a symlink) is refused, and so is an archive with more than MAX_ZIP_ENTRIES entries or whose files
unpack to more than the upload limit (read with a cap, so a lying header does not matter).
"""

from __future__ import annotations

import io
import stat
import zipfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import IO

from django.conf import settings

from .foreign import VSCODE_SUFFIXES
from .format import SUFFIX
from .frontmatter import Problem

MAX_FILE_BYTES = 1 << 20  # one mode file; a prompt is a few kilobytes
MAX_ZIP_ENTRIES = 1000
MODE, VSCODE, CLAUDE = "mode", "vscode", "claude"


@dataclass(frozen=True)
class Source:
    name: str  # as shown in messages: the path relative to the directory or inside the zip
    text: str
    kind: str


def kind_of(name: str, *, loose: bool = False) -> str | None:
    path = PurePosixPath(name.replace("\\", "/"))
    lowered = path.name.lower()
    if lowered.endswith(SUFFIX):
        return MODE
    if lowered.endswith(VSCODE_SUFFIXES):
        return VSCODE
    if lowered.endswith(".md") and (loose or tuple(path.parts[-3:-1]) == (".claude", "agents")):
        return CLAUDE
    return None


def decode(name: str, data: bytes, kind: str) -> tuple[Source | None, Problem | None]:
    if len(data) > MAX_FILE_BYTES:
        return None, Problem(name, None, None, f"larger than {MAX_FILE_BYTES} bytes: not a mode file")
    try:
        return Source(name, data.decode("utf-8"), kind), None
    except UnicodeDecodeError as exc:
        return None, Problem(name, data[: exc.start].count(b"\n") + 1, None, "not UTF-8 text")


def _collect(sources: list[Source], problems: list[Problem], source: Source | None, problem: Problem | None) -> None:
    if source is not None:
        sources.append(source)
    if problem is not None:
        problems.append(problem)


def directory_files(directory: Path) -> list[Path]:
    patterns = [f"*{SUFFIX}", *(f"*{suffix}" for suffix in VSCODE_SUFFIXES), ".github/agents/*.agent.md"]
    patterns.append(".claude/agents/*.md")
    if directory.resolve().parts[-2:] == (".claude", "agents"):
        patterns.append("*.md")
    found = {path for pattern in patterns for path in directory.glob(pattern) if path.is_file()}
    return sorted(found)


def read_directory(directory: Path) -> tuple[list[Source], list[Problem]]:
    sources: list[Source] = []
    problems: list[Problem] = []
    inside_claude = directory.resolve().parts[-2:] == (".claude", "agents")
    for path in directory_files(directory):
        name = path.relative_to(directory).as_posix()
        kind = kind_of(name) or (CLAUDE if inside_claude and name.endswith(".md") else None)
        if kind is None:
            continue
        if path.stat().st_size > MAX_FILE_BYTES:
            problems.append(Problem(name, None, None, f"larger than {MAX_FILE_BYTES} bytes: not a mode file"))
            continue
        source, problem = decode(name, path.read_bytes(), kind)
        _collect(sources, problems, source, problem)
    return sources, problems


def _unsafe(name: str) -> bool:
    path = PurePosixPath(name.replace("\\", "/"))
    return name.startswith(("/", "\\")) or ".." in path.parts or (len(name) > 1 and name[1] == ":")


def _is_symlink(info: zipfile.ZipInfo) -> bool:
    return stat.S_ISLNK(info.external_attr >> 16)


def read_zip(data: bytes | IO[bytes], *, archive: str = "upload.zip") -> tuple[list[Source], list[Problem]]:
    """The mode files in a zip, each read with a cap; problems name the entry."""
    budget = settings.APTIX_UPLOAD_MAX_BYTES
    fileobj = io.BytesIO(data) if isinstance(data, bytes) else data
    try:
        archive_file = zipfile.ZipFile(fileobj)
    except (zipfile.BadZipFile, OSError, ValueError):
        return [], [Problem(archive, None, None, "not a zip file")]
    with archive_file:
        infos = archive_file.infolist()
        if len(infos) > MAX_ZIP_ENTRIES:
            return [], [Problem(archive, None, None, f"more than {MAX_ZIP_ENTRIES} entries: refused")]
        sources: list[Source] = []
        problems: list[Problem] = []
        for info in infos:
            name = info.filename
            if _unsafe(name) or _is_symlink(info):
                problems.append(Problem(name, None, None, "a path that leaves the archive (or a link): refused"))
                continue
            kind = kind_of(name)
            if info.is_dir() or kind is None or name.startswith("__MACOSX/"):
                continue
            if info.file_size > MAX_FILE_BYTES:
                problems.append(Problem(name, None, None, f"larger than {MAX_FILE_BYTES} bytes: not a mode file"))
                continue
            try:
                with archive_file.open(info) as entry:
                    content = entry.read(MAX_FILE_BYTES + 1)
            except (zipfile.BadZipFile, RuntimeError, NotImplementedError, OSError, EOFError) as exc:
                problems.append(Problem(name, None, None, f"cannot be read from the zip ({exc})"))
                continue
            budget -= len(content)
            if budget < 0:
                return sources, [*problems, Problem(archive, None, None, "unpacks to more than the upload limit")]
            source, problem = decode(name, content, kind)
            _collect(sources, problems, source, problem)
        return sources, problems


def read_uploads(files: Iterable[tuple[str, bytes | IO[bytes]]]) -> tuple[list[Source], list[Problem]]:
    """Uploaded files: zips are opened, `.md` files read (a loose `.md` without a known suffix: Claude Code)."""
    sources: list[Source] = []
    problems: list[Problem] = []
    for name, data in files:
        base = PurePosixPath(name.replace("\\", "/")).name
        if base.lower().endswith(".zip"):
            more, trouble = read_zip(data, archive=base)
            sources += more
            problems += trouble
            continue
        kind = kind_of(base, loose=True)
        if kind is None:
            problems.append(Problem(base, None, None, "neither a .md file nor a .zip"))
            continue
        content = data if isinstance(data, bytes) else data.read(MAX_FILE_BYTES + 1)
        source, problem = decode(base, content, kind)
        _collect(sources, problems, source, problem)
    return sources, problems


def zip_bytes(files: dict[str, str]) -> bytes:
    """A zip of `name → text`, entries in name order with a fixed date, so the same catalog gives the same bytes."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name in sorted(files):
            info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            archive.writestr(info, files[name].encode("utf-8"))
    return buffer.getvalue()
