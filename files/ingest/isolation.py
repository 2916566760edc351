"""Each upload is read by a child process (files/ingest/child.py) within an address space
(APTIX_FILES_INGEST_CHILD_MEMORY_MB) and a time (APTIX_FILES_INGEST_TIMEOUT): a file that makes a
reader allocate without bound, abort or hang ends that child, and the upload is refused with 422
naming the limit. The child is a fresh interpreter (`python -m`, not a fork of a threaded server),
given only the settings ingestion reads and an environment without the server's secrets."""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import tempfile
from dataclasses import asdict
from pathlib import Path
from typing import Any

from django.conf import settings

from ..errors import FileRefused, unreadable
from ..sniff import Sniffed
from .child import MEMORY_EXIT, RESULT
from .ingested import Ingested

logger = logging.getLogger(__name__)

ROOT = Path(__file__).resolve().parents[2]  # where `files` is importable from
# What ingestion reads of Django's settings, handed to the child (tests' overrides included).
PASSED = (
    "APTIX_FILES_QUERY_THREADS",
    "APTIX_FILES_INGEST_MEMORY_MB",
    "APTIX_FILES_INGEST_CHILD_MEMORY_MB",
    "APTIX_FILES_MAX_ROWS",
    "APTIX_FILES_MAX_COLUMNS",
    "APTIX_FILES_MAX_UNZIPPED",
)
OUT_OF_MEMORY = {-signal.SIGABRT, -signal.SIGKILL, -signal.SIGSEGV, -signal.SIGBUS, MEMORY_EXIT}
STDERR_LOGGED = 4000


def ingest_in_child(path: str, sniffed: Sniffed, name: str, workdir: Path) -> Ingested:
    """What `ingest_here` makes of the upload, made in a child process; FileRefused as it raises,
    and 422 when the child runs out of memory or time or dies."""
    memory_mb = settings.APTIX_FILES_INGEST_CHILD_MEMORY_MB
    timeout = settings.APTIX_FILES_INGEST_TIMEOUT
    request = {
        "path": str(path),
        "sniffed": asdict(sniffed),
        "name": name,
        "workdir": str(workdir),
        "memory_mb": memory_mb,
        "settings": {key: getattr(settings, key) for key in PASSED},
    }
    try:
        done = subprocess.run(
            [sys.executable, "-m", "files.ingest.child"],
            input=json.dumps(request).encode(),
            cwd=ROOT,
            env=_environment(),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired:  # run() killed the child and waited for it
        raise unreadable(f"The file could not be read: reading it took more than {timeout:g} s.") from None
    answer = _answer(workdir / RESULT)
    if done.returncode != 0 or answer is None:
        _log(sniffed, f"ended with {done.returncode}", done.stderr)
        if done.returncode in OUT_OF_MEMORY:
            raise unreadable(f"The file could not be read: reading it needed more than {memory_mb} MB of memory.")
        raise unreadable("The file could not be read: its reader stopped unexpectedly.")
    if "refused" in answer:
        raise FileRefused(int(answer["refused"]["status"]), str(answer["refused"]["message"]))
    if "failed" in answer:
        _log(sniffed, "failed", done.stderr)
        raise unreadable(f"The file could not be read: {answer['failed']}")
    return _ingested(answer["ingested"], workdir)


def _environment() -> dict[str, str]:
    """The child's environment: none of the server's variables (secrets, database URLs), and glibc's
    per-thread arenas capped (each reserves 64 MB of the address space the child is limited to)."""
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "LANG": "C.UTF-8",
        "TMPDIR": tempfile.gettempdir(),
        "MALLOC_ARENA_MAX": "2",
        "PYTHONDONTWRITEBYTECODE": "1",
    }


def _answer(result: Path) -> dict[str, Any] | None:
    try:
        answer = json.loads(result.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    finally:
        result.unlink(missing_ok=True)
    return answer if isinstance(answer, dict) else None


def _ingested(made: dict[str, Any], workdir: Path) -> Ingested:
    data_path = None
    if made["data_name"] is not None:
        data_path = (workdir / made["data_name"]).resolve()
        if workdir.resolve() not in data_path.parents or not data_path.is_file():
            raise unreadable("The file could not be read: its reader made no data.")
    return Ingested(
        data_path=data_path,
        data_suffix=made["data_suffix"],
        tables=made["tables"],
        pages=made["pages"],
        preview=made["preview"],
    )


def _log(sniffed: Sniffed, what: str, stderr: bytes | None) -> None:
    tail = (stderr or b"")[-STDERR_LOGGED:].decode("utf-8", errors="replace")
    logger.warning("ingest child for a %s upload %s: %s", sniffed.format, what, tail)
