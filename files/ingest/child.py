"""`python -m files.ingest.child`: read one upload in a process of its own (files/ingest/isolation.py
starts it). An untrusted file can make a reader allocate without bound (calamine aborts the process
when an allocation fails), loop, or crash in C; here that ends this process only, never the web
process that took the upload and serves everyone's streams.

The request comes as JSON on stdin: the upload's path, what it was sniffed to be, its name, the work
directory, the settings ingestion reads, and the address space and CPU time this process may use. The
answer is written as JSON to RESULT in the work directory: {"ingested": …} or {"refused": {"status",
"message"}}, or {"failed": message} for an error no reader anticipated (its traceback on stderr). A
MemoryError exits with MEMORY_EXIT and writes nothing (writing could fail too). Imports only what
ingestion needs: Django's settings are configured from the request, no app is loaded."""

from __future__ import annotations

import json
import os
import resource
import sys
import traceback
from pathlib import Path
from typing import Any

RESULT = "ingest-result.json"
MEMORY_EXIT = 3


def main() -> None:
    request = json.loads(sys.stdin.read())
    limit = int(request["memory_mb"]) << 20
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # an abort leaves no core file of the upload behind
    from django.conf import settings

    settings.configure(**request["settings"])
    workdir = Path(request["workdir"])
    try:
        answer = _ingest(request, workdir)
    except MemoryError:
        os._exit(MEMORY_EXIT)
    (workdir / RESULT).write_text(json.dumps(answer), encoding="utf-8")


def _ingest(request: dict[str, Any], workdir: Path) -> dict[str, Any]:
    from ..errors import FileRefused
    from ..sniff import Sniffed
    from .common import first_line
    from .readers import ingest_here

    try:
        ingested = ingest_here(request["path"], Sniffed(**request["sniffed"]), request["name"], workdir)
    except FileRefused as exc:
        return {"refused": {"status": exc.status, "message": exc.message}}
    except MemoryError:
        raise
    except ImportError as exc:  # a reader's library cannot even be mapped into the address space left
        if "map segment" in str(exc) or "cannot allocate memory" in str(exc).lower():
            raise MemoryError from None
        raise
    except Exception as exc:  # noqa: BLE001 - the parent answers 422 and logs the traceback
        traceback.print_exc()
        return {"failed": first_line(exc)}
    data = ingested.data_path
    return {
        "ingested": {
            "data_name": None if data is None else str(Path(data).relative_to(workdir)),
            "data_suffix": ingested.data_suffix,
            "tables": ingested.tables,
            "pages": ingested.pages,
            "preview": ingested.preview,
        }
    }


if __name__ == "__main__":
    main()
