"""An XLSX workbook's sheets measured before python-calamine reads them. Calamine makes a sheet one
rectangle from its first cell to its last, in memory at once: a 1.5 KB file with cells A1 and
XFD1048576 asks for 1,048,576 × 16,384 cells, and the failed allocation aborts the process (Rust
aborts; no exception to catch). So each sheet's XML is read here first, bounded (zipfile, chunk by
chunk) and streamed through expat (no tree is built; a DTD, which no workbook has, is refused, so no
entity can expand), for its declared <dimension> and every row's and cell's reference; a sheet whose
rectangle is too wide, too long or too large for the ingest's memory is refused naming its size, and a
reference that is no cell (A-1) is refused naming it."""

from __future__ import annotations

import posixpath
import re
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from xml.parsers import expat

from django.conf import settings

from ..errors import size_text, unreadable

CHUNK = 1 << 20
# What calamine keeps per cell of the rectangle (its Data enum: a String and a tag), and how much of the
# ingest process's memory one sheet's rectangle may take.
CELL_BYTES = 32
SHEET_SHARE = 0.5
MAX_EXCEL_ROWS = 1_048_576
MAX_EXCEL_COLUMNS = 16_384
CELL = re.compile(r"\$?([A-Z]{1,3})\$?([0-9]{1,7})")
MAIN = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"
RELATIONSHIPS = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"


class _Malformed(Exception):
    """The XML is not what a workbook writes (a DTD, a reference that is no cell)."""


@dataclass
class _Extent:
    """The rectangle a sheet's cells span (calamine's Range), rows and columns counted from 1."""

    top: int = 0
    bottom: int = 0
    left: int = 0
    right: int = 0

    def add(self, row: int, column: int) -> None:
        if not self.top:
            self.top, self.bottom, self.left, self.right = row, row, column, column
            return
        self.top, self.bottom = min(self.top, row), max(self.bottom, row)
        self.left, self.right = min(self.left, column), max(self.right, column)

    @property
    def height(self) -> int:
        return self.bottom - self.top + 1 if self.top else 0

    @property
    def width(self) -> int:
        return self.right - self.left + 1 if self.top else 0


def check_sheets(path: str) -> None:
    """Refuse (422) a workbook any of whose sheets is too large to read, or whose XML is malformed,
    before calamine loads any of it. The caller checked the archive's unzipped size."""
    try:
        with zipfile.ZipFile(path) as archive:
            for name, part in _sheet_parts(archive):
                extent = _sheet_extent(archive, part, name)
                _check_extent(name, extent)
    except zipfile.BadZipFile as exc:
        raise unreadable(f"The workbook is a damaged archive: {exc}.") from None
    except _Malformed as exc:
        raise unreadable(f"The workbook could not be read: {exc}.") from None


def column_number(letters: str) -> int:
    number = 0
    for letter in letters:
        number = number * 26 + ord(letter) - 64
    return number


def cell_name(row: int, column: int) -> str:
    letters = ""
    while column:
        column, rest = divmod(column - 1, 26)
        letters = chr(65 + rest) + letters
    return f"{letters}{row}"


def _check_extent(name: str, extent: _Extent) -> None:
    height, width = extent.height, extent.width
    if not height:
        return
    span = f"{cell_name(extent.top, extent.left)}:{cell_name(extent.bottom, extent.right)}"
    size = f"Sheet “{name}” spans {height:,} rows × {width:,} columns ({span})"
    if width > settings.APTIX_FILES_MAX_COLUMNS:
        raise unreadable(f"{size}; at most {settings.APTIX_FILES_MAX_COLUMNS} columns are accepted.")
    if height > settings.APTIX_FILES_MAX_ROWS + 1:
        raise unreadable(f"{size}; at most {settings.APTIX_FILES_MAX_ROWS} rows are accepted.")
    budget = int(settings.APTIX_FILES_INGEST_CHILD_MEMORY_MB * SHEET_SHARE) << 20
    if height * width * CELL_BYTES > budget:
        raise unreadable(
            f"{size}: reading it would take about {size_text(height * width * CELL_BYTES)}, more than the "
            f"{size_text(budget)} a sheet may use."
        )


def _sheet_parts(archive: zipfile.ZipFile) -> list[tuple[str, str]]:
    """Each sheet's name and the archive member its XML is in, from the workbook and its relationships
    (a sheet whose part is missing is refused: calamine would fail on it)."""
    sheets: list[tuple[str, str]] = []
    targets: dict[str, str] = {}

    def workbook_element(tag: str, attributes: dict[str, str]) -> None:
        if tag == f"{MAIN} sheet" or tag.endswith(" sheet") or tag == "sheet":
            sheets.append((attributes.get("name", "?"), attributes.get(f"{RELATIONSHIPS} id", "")))

    def relationship(tag: str, attributes: dict[str, str]) -> None:
        if tag.endswith("Relationship"):
            targets[attributes.get("Id", "")] = attributes.get("Target", "")

    _parse(archive, "xl/workbook.xml", workbook_element)
    names = set(archive.namelist())
    if "xl/_rels/workbook.xml.rels" in names:
        _parse(archive, "xl/_rels/workbook.xml.rels", relationship)
    parts = []
    for name, relation in sheets:
        target = targets.get(relation, "")
        part = target.lstrip("/") if target.startswith("/") else posixpath.normpath(posixpath.join("xl", target))
        if not target or part not in names:
            raise _Malformed(f"sheet “{name}” is named in the workbook but its part is missing")
        parts.append((name, part))
    return parts


def _sheet_extent(archive: zipfile.ZipFile, part: str, name: str) -> _Extent:
    extent = _Extent()
    declared = _Extent()
    place = {"row": 0, "column": 0}

    def element(tag: str, attributes: dict[str, str]) -> None:
        local = tag.rpartition(" ")[2]
        if local == "c":
            reference = attributes.get("r")
            if reference is None:
                row, column = place["row"] or 1, place["column"] + 1
            else:
                row, column = _cell(reference, name)
            place["column"] = column
            extent.add(row, column)
        elif local == "row":
            number = attributes.get("r")
            if number is not None and not number.isdigit():
                raise _Malformed(f"sheet “{name}” has a row numbered “{number[:20]}”")
            place["row"] = int(number) if number is not None else place["row"] + 1
            place["column"] = 0
        elif local == "dimension":
            for reference in attributes.get("ref", "").split(":"):
                if reference:
                    declared.add(*_cell(reference, name))

    _parse(archive, part, element)
    _check_extent(name, declared)  # what the sheet says of itself: calamine reserves room for it
    return extent


def _cell(reference: str, sheet: str) -> tuple[int, int]:
    match = CELL.fullmatch(reference)
    row, column = (int(match.group(2)), column_number(match.group(1))) if match else (0, 0)
    if not (1 <= row <= MAX_EXCEL_ROWS and 1 <= column <= MAX_EXCEL_COLUMNS):
        raise _Malformed(f"sheet “{sheet}” has a cell reference “{reference[:20]}” that is no cell")
    return row, column


def _parse(archive: zipfile.ZipFile, part: str, on_element: Callable[[str, dict[str, str]], None]) -> None:
    """Stream `part` through expat, calling `on_element(tag, attributes)` for each element's start
    (tags as "namespace local"); a DTD (an entity to expand) is refused."""
    parser = expat.ParserCreate(namespace_separator=" ")

    def refuse_dtd(*_: object) -> None:
        raise _Malformed(f"{part} declares a DTD, which no workbook has")

    parser.StartDoctypeDeclHandler = refuse_dtd
    parser.EntityDeclHandler = refuse_dtd
    parser.StartElementHandler = on_element
    try:
        for chunk in _chunks(archive, part):
            parser.Parse(chunk, False)
        parser.Parse(b"", True)
    except expat.ExpatError as exc:
        raise _Malformed(f"{part} is not well-formed XML ({exc})") from None


def _chunks(archive: zipfile.ZipFile, part: str) -> Iterator[bytes]:
    with archive.open(part) as member:  # stops at the declared size; a lie fails the CRC (BadZipFile)
        while chunk := member.read(CHUNK):
            yield chunk
