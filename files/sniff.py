"""What an uploaded file is, decided by its content (magic bytes, then parsing), never by its name
or declared type. A name whose extension says another kind than the content is refused (415), as is
anything we do not take: a renamed executable stays an executable."""

from __future__ import annotations

import codecs
import zipfile
from dataclasses import dataclass
from pathlib import PurePath

import filetype

from .errors import FileRefused

HEAD_BYTES = 64 << 10
ERROR_EMPTY = "“{name}” is empty: there is nothing in it to read. Attach the file it should be."
ACCEPTED = (
    "tables (CSV, TSV, XLSX, Parquet, JSON, JSONL), documents (PDF, DOCX, Markdown, plain text, HTML) "
    "and images (PNG, JPEG, WebP, GIF)"
)
IMAGES = {"image/png": "png", "image/jpeg": "jpeg", "image/webp": "webp", "image/gif": "gif"}
KIND_OF = {
    **dict.fromkeys(("csv", "tsv", "xlsx", "parquet", "json", "jsonl"), "table"),
    **dict.fromkeys(("pdf", "docx", "markdown", "text", "html"), "document"),
    **dict.fromkeys(("png", "jpeg", "webp", "gif"), "image"),
}
# What a name's extension claims; an extension not listed claims nothing.
EXTENSIONS = {
    "csv": {"csv"},
    "tsv": {"tsv", "csv"},
    "tab": {"tsv", "csv"},
    "xlsx": {"xlsx"},
    "parquet": {"parquet"},
    "json": {"json", "jsonl"},
    "jsonl": {"jsonl", "json"},
    "ndjson": {"jsonl", "json"},
    "pdf": {"pdf"},
    "docx": {"docx"},
    "md": {"markdown", "text"},
    "markdown": {"markdown", "text"},
    "txt": {"text", "markdown"},
    "text": {"text", "markdown"},
    "html": {"html"},
    "htm": {"html"},
    "png": {"png"},
    "jpg": {"jpeg"},
    "jpeg": {"jpeg"},
    "webp": {"webp"},
    "gif": {"gif"},
}
# Text formats a name may choose between when the content fits several (a CSV is also plain text).
TEXT_BY_EXTENSION = {"csv": "csv", "tsv": "tsv", "tab": "tsv", "md": "markdown", "markdown": "markdown", "txt": "text"}
DESCRIBED = {
    "csv": "a CSV table",
    "tsv": "a TSV table",
    "xlsx": "an XLSX workbook",
    "parquet": "a Parquet table",
    "json": "JSON",
    "jsonl": "JSON lines",
    "pdf": "a PDF document",
    "docx": "a DOCX document",
    "markdown": "Markdown",
    "text": "plain text",
    "html": "an HTML page",
    "png": "a PNG image",
    "jpeg": "a JPEG image",
    "webp": "a WebP image",
    "gif": "a GIF image",
}


@dataclass(frozen=True)
class Sniffed:
    kind: str  # table | document | image
    format: str  # a key of KIND_OF
    encoding: str | None = None  # a text format's encoding


def sniff(path: str, name: str) -> Sniffed:
    """The kind and format of the file at `path` (uploaded as `name`), or FileRefused (415)."""
    with open(path, "rb") as handle:
        head = handle.read(HEAD_BYTES)
    if len(head) < HEAD_BYTES and not head.removeprefix(codecs.BOM_UTF8).strip():
        raise FileRefused(422, ERROR_EMPTY.format(name=name))  # a reader would invent a column of nothing
    extension = PurePath(name).suffix.lower().lstrip(".")
    found = _binary_format(path, head)
    if found is None:
        found = _text_format(head, extension)
    claimed = EXTENSIONS.get(extension)
    if claimed is not None and found.format not in claimed:
        raise FileRefused(
            415,
            f"“{name}” is named as .{extension} but its content is {DESCRIBED[found.format]}; "
            "rename it or upload the file it should be.",
        )
    return found


def _binary_format(path: str, head: bytes) -> Sniffed | None:
    if head.startswith(b"PAR1"):
        return Sniffed("table", "parquet")
    if head.startswith(b"%PDF-"):
        return Sniffed("document", "pdf")
    if head.startswith(b"PK\x03\x04"):
        return Sniffed(KIND_OF[fmt := _office_format(path)], fmt)
    guess = filetype.guess(head)
    if guess is not None:
        if guess.mime in IMAGES:
            return Sniffed("image", IMAGES[guess.mime])
        raise refused(f"{guess.mime} (.{guess.extension})")
    if _looks_executable(head):
        raise refused("an executable program")
    return None


def _office_format(path: str) -> str:
    try:
        with zipfile.ZipFile(path) as archive:
            names = set(archive.namelist())
    except (zipfile.BadZipFile, OSError, ValueError):
        raise FileRefused(422, "The file starts like a zip archive but cannot be opened as one.") from None
    if "xl/workbook.xml" in names:
        return "xlsx"
    if "word/document.xml" in names:
        return "docx"
    raise refused("a zip archive that is neither an XLSX workbook nor a DOCX document")


def _looks_executable(head: bytes) -> bool:
    return head.startswith((b"MZ", b"\x7fELF", b"\xcf\xfa\xed\xfe", b"\xca\xfe\xba\xbe", b"#!"))


def _text_format(head: bytes, extension: str) -> Sniffed:
    encoding = text_encoding(head)
    if encoding is None:
        raise refused("binary data of an unknown kind")
    text = head.decode(encoding, errors="ignore").lstrip("\ufeff").lstrip()
    lowered = text[:512].lower()
    if extension in ("json", "jsonl", "ndjson") or text[:1] in ("{", "["):
        first = text.split("\n", 1)[0].strip()
        lines = [line for line in text.splitlines() if line.strip()]
        if text[:1] == "{" and len(lines) > 1 and first.endswith("}"):
            return Sniffed("table", "jsonl", encoding)
        return Sniffed("table", "json", encoding)
    if lowered.startswith(("<!doctype html", "<html")) or "<body" in lowered:
        return Sniffed("document", "html", encoding)
    if extension in TEXT_BY_EXTENSION:
        chosen = TEXT_BY_EXTENSION[extension]
        return Sniffed(KIND_OF[chosen], chosen, encoding)
    if _is_delimited(text):
        return Sniffed("table", "tsv" if "\t" in text.split("\n", 1)[0] else "csv", encoding)
    if any(line.startswith("#") for line in text.splitlines()[:200]):
        return Sniffed("document", "markdown", encoding)
    return Sniffed("document", "text", encoding)


def text_encoding(head: bytes) -> str | None:
    """The encoding of text `head`, or None when it is not text (charset-normalizer decides)."""
    if not head:
        return "utf-8"
    if b"\x00" in head and not head.startswith((b"\xff\xfe", b"\xfe\xff")):
        return None
    try:
        head.decode("utf-8")
        return "utf-8-sig" if head.startswith(b"\xef\xbb\xbf") else "utf-8"
    except UnicodeDecodeError as exc:
        if exc.start >= len(head) - 4:  # a character cut at the end of the head
            return "utf-8-sig" if head.startswith(b"\xef\xbb\xbf") else "utf-8"
    from charset_normalizer import from_bytes

    best = from_bytes(head).best()
    return None if best is None else best.encoding


def _is_delimited(text: str) -> bool:
    """Whether the opening lines look like a table: the same count (at least one) of one delimiter
    on every line."""
    lines = [line for line in text.splitlines()[:20] if line.strip()]
    if len(lines) < 2:
        return False
    if len(lines) == 20 or not text.endswith("\n"):
        lines = lines[:-1] or lines  # the last line may be cut by the head
    for delimiter in (",", ";", "\t", "|"):
        counts = {line.count(delimiter) for line in lines}
        if len(counts) == 1 and counts.pop() >= 1:
            return True
    return False


def refused(found: str) -> FileRefused:
    return FileRefused(415, f"This file is {found}. Aptix accepts {ACCEPTED}.")
