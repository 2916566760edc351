"""Hostile and malformed office files, built byte by byte with zipfile: a minimal XLSX whose sheet
XML the test writes (cells A1 and XFD1048576, bad XML, a missing sheet, a cell reference "A-1"), and
DOCX files broken after python-docx wrote them (bad XML, entity expansion, a CRC that fails, a
central directory that lies about a member's size)."""

from __future__ import annotations

import io
import zipfile

MAIN = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"
PACKAGE_RELS = "http://schemas.openxmlformats.org/package/2006/relationships"
DOCUMENT_RELS = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
CONTENT_TYPES = (
    '<?xml version="1.0" encoding="UTF-8"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
    '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>'
    '<Default Extension="xml" ContentType="application/xml"/>'
    '<Override PartName="/xl/workbook.xml" '
    'ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml"/>'
    '<Override PartName="/xl/worksheets/sheet1.xml" '
    'ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.worksheet+xml"/></Types>'
)


def sheet_xml(cells: list[tuple[str, str]], dimension: str | None = None) -> str:
    """A worksheet of inline-string cells (reference, text), each in the row its reference names."""
    rows = "".join(
        f'<row r="{_row_of(ref)}"><c r="{ref}" t="inlineStr"><is><t>{text}</t></is></c></row>' for ref, text in cells
    )
    declared = f'<dimension ref="{dimension}"/>' if dimension else ""
    return (
        f'<?xml version="1.0" encoding="UTF-8"?><worksheet xmlns="{MAIN}">{declared}'
        f"<sheetData>{rows}</sheetData></worksheet>"
    )


def _row_of(reference: str) -> str:
    return "".join(ch for ch in reference if ch.isdigit()) or "1"


def xlsx_with_sheet(sheet: str, *, name: str = "Sheet1", target: str = "worksheets/sheet1.xml") -> bytes:
    """A minimal workbook of one sheet `name` whose XML is `sheet`; the workbook's relationship points
    at `target` (another name than the part written: a sheet the workbook names but is missing)."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("[Content_Types].xml", CONTENT_TYPES)
        archive.writestr(
            "_rels/.rels",
            f'<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="{PACKAGE_RELS}"><Relationship Id="rId1" '
            f'Type="{DOCUMENT_RELS}/officeDocument" Target="xl/workbook.xml"/></Relationships>',
        )
        archive.writestr(
            "xl/workbook.xml",
            f'<?xml version="1.0" encoding="UTF-8"?><workbook xmlns="{MAIN}" xmlns:r="{DOCUMENT_RELS}"><sheets>'
            f'<sheet name="{name}" sheetId="1" r:id="rId1"/></sheets></workbook>',
        )
        archive.writestr(
            "xl/_rels/workbook.xml.rels",
            f'<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="{PACKAGE_RELS}"><Relationship Id="rId1" '
            f'Type="{DOCUMENT_RELS}/worksheet" Target="{target}"/></Relationships>',
        )
        archive.writestr("xl/worksheets/sheet1.xml", sheet)
    return out.getvalue()


def xlsx_huge_range() -> bytes:
    """1.5 KB: cells A1 and XFD1048576, a rectangle of 1,048,576 × 16,384 cells to whoever fills it."""
    return xlsx_with_sheet(sheet_xml([("A1", "first"), ("XFD1048576", "last")]))


def billion_laughs(levels: int = 9) -> bytes:
    entities = '<!ENTITY lol0 "lol">' + "".join(
        f'<!ENTITY lol{i} "{f"&lol{i - 1};" * 10}">' for i in range(1, levels + 1)
    )
    return (
        f'<?xml version="1.0"?><!DOCTYPE lolz [{entities}]>'
        f'<w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body><w:p><w:r>'
        f"<w:t>&lol{levels};</w:t></w:r></w:p></w:body></w:document>"
    ).encode()


def with_member(data: bytes, member: str, content: bytes, *, compression: int = zipfile.ZIP_DEFLATED) -> bytes:
    """The archive `data` with `member`'s content replaced."""
    source = zipfile.ZipFile(io.BytesIO(data))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", compression) as archive:
        for info in source.infolist():
            archive.writestr(info.filename, content if info.filename == member else source.read(info.filename))
    return out.getvalue()


def crc_mismatch(data: bytes, member: str, marker: bytes) -> bytes:
    """`data` stored uncompressed, then one byte of `member`'s content (at `marker`) flipped after
    writing: its CRC no longer matches."""
    source = zipfile.ZipFile(io.BytesIO(data))
    stored = with_member(data, member, source.read(member), compression=zipfile.ZIP_STORED)
    raw = bytearray(stored)
    at = raw.index(marker)
    raw[at] ^= 0x20
    return bytes(raw)


def lying_size(data: bytes, member: str, size: int = 10) -> bytes:
    """`data` whose central directory says `member` decompresses to `size` bytes."""
    raw = bytearray(data)
    at = raw.find(b"PK\x01\x02")
    while at != -1:
        length = int.from_bytes(raw[at + 28 : at + 30], "little")
        if raw[at + 46 : at + 46 + length] == member.encode():
            raw[at + 24 : at + 28] = size.to_bytes(4, "little")
        at = raw.find(b"PK\x01\x02", at + 4)
    return bytes(raw)
