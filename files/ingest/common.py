"""What every kind's reader shares: an error's first line for the user (naming no path of the
server's), and the zip bomb check of XLSX and DOCX. No DuckDB here: a document's or an image's ingest
process imports only what it reads."""

from __future__ import annotations

import re
import zipfile

from django.conf import settings

from ..errors import FileRefused, size_text

# A path on this server in a reader's error (DuckDB names the file it failed on): the user learns which
# of theirs failed from the message around it, and nothing of where the server keeps it.
SERVER_PATH = re.compile(r"""(?<![\w.:/])/(?:[^\s'"/]+/)+[^\s'"]*""")


def first_line(exc: BaseException) -> str:
    """An error's first line, for the user: any path on this server in it becomes "the file"."""
    line = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
    return SERVER_PATH.sub("the file", line)


def check_unzipped_size(path: str) -> None:
    """XLSX and DOCX are zip archives: refuse one whose content would decompress past
    APTIX_FILES_MAX_UNZIPPED (a zip bomb) before decompressing any of it. (A member whose declared
    size lies is stopped at that size by zipfile, which then fails its CRC: BadZipFile.)"""
    limit = settings.APTIX_FILES_MAX_UNZIPPED
    with zipfile.ZipFile(path) as archive:
        total = sum(info.file_size for info in archive.infolist())
    if total > limit:
        raise FileRefused(
            413,
            f"The archive would decompress to {size_text(total)}, more than the limit of {size_text(limit)} "
            "(a zip bomb, or a workbook or document too large to read).",
        )
