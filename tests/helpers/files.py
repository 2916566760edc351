"""Real files for the files tests, made by the tests themselves (CSV with a BOM and semicolons, an
XLSX of two sheets, Parquet, JSONL, PDF, DOCX, PNG, a renamed executable, a zip bomb), and the
fixtures that keep uploads in a temporary media directory."""

from __future__ import annotations

import io
import json
import zipfile
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

SALES_ROWS = [
    ("North", "Q1", 100.5),
    ("North", "Q2", 150.0),
    ("South", "Q1", 200.0),
    ("South", "Q2", 210.0),
    ("East", "Q1", 50.0),
    ("East", "Q2", 120.0),
]


@pytest.fixture(autouse=True)
def media(settings, tmp_path):
    """Uploads stored under a temporary directory, and a cache directory beside it."""
    settings.MEDIA_ROOT = tmp_path / "media"
    settings.FILES_CACHE_DIR = tmp_path / "cache"
    return settings.MEDIA_ROOT


def uploaded(name: str, data: bytes) -> SimpleUploadedFile:
    return SimpleUploadedFile(name, data)


def csv_semicolon_bom() -> bytes:
    lines = ["region;quarter;sales"] + [f"{r};{q};{str(s).replace('.', ',')}" for r, q, s in SALES_ROWS]
    return "\ufeff".encode() + ("\n".join(lines) + "\n").encode("utf-8")


def csv_plain(rows: list[tuple] | None = None) -> bytes:
    lines = ["region,quarter,sales"] + [f"{r},{q},{s}" for r, q, s in rows or SALES_ROWS]
    return ("\n".join(lines) + "\n").encode()


def xlsx_two_sheets() -> bytes:
    from openpyxl import Workbook

    book = Workbook()
    sheet = book.active
    sheet.title = "Sales"
    sheet.append(["region", "quarter", "sales"])
    for row in SALES_ROWS:
        sheet.append(list(row))
    targets = book.create_sheet("Targets")
    targets.append(["region", "target"])
    targets.append(["North", 300])
    targets.append(["South", 400])
    out = io.BytesIO()
    book.save(out)
    return out.getvalue()


def parquet_bytes(tmp_path) -> bytes:
    import duckdb

    path = tmp_path / "made.parquet"
    connection = duckdb.connect()
    connection.execute(f"COPY (SELECT range AS id, range * 2.5 AS amount FROM range(40)) TO '{path}' (FORMAT parquet)")
    connection.close()
    return path.read_bytes()


def jsonl_bytes() -> bytes:
    return "\n".join(json.dumps({"region": r, "quarter": q, "sales": s}) for r, q, s in SALES_ROWS).encode() + b"\n"


def pdf_bytes(pages: list[str]) -> bytes:
    """A PDF with one text line (or a few) per page, drawn by matplotlib's PDF backend."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.backends.backend_pdf import PdfPages
    from matplotlib.figure import Figure

    out = io.BytesIO()
    with PdfPages(out) as pdf:
        for text in pages:
            figure = Figure(figsize=(8.27, 11.69))
            for n, line in enumerate(text.splitlines()):
                figure.text(0.08, 0.92 - n * 0.03, line, fontsize=11)
            pdf.savefig(figure)
    return out.getvalue()


def docx_bytes() -> bytes:
    import docx

    document = docx.Document()
    document.add_heading("Decision", level=1)
    document.add_paragraph("We store uploads through the storage API.")
    document.add_heading("Consequences", level=1)
    document.add_paragraph("Workers read what web processes stored.")
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def png_bytes(size: tuple[int, int] = (40, 30)) -> bytes:
    from PIL import Image

    out = io.BytesIO()
    Image.new("RGB", size, (200, 30, 30)).save(out, "PNG")
    return out.getvalue()


def executable_bytes() -> bytes:
    """The start of an ELF executable (what `filetype` and the magic bytes say it is)."""
    return b"\x7fELF\x02\x01\x01\x00" + b"\x00" * 8 + b"\x02\x00\x3e\x00" + b"\x00" * 200


def zip_bomb_xlsx(decompressed: int) -> bytes:
    """An XLSX-shaped archive whose one sheet decompresses to `decompressed` bytes of zeros (a few KB
    compressed)."""
    return _zip_bomb({"xl/workbook.xml": "<workbook/>"}, "xl/worksheets/sheet1.xml", decompressed)


def zip_bomb_docx(decompressed: int) -> bytes:
    """A DOCX-shaped archive whose document part decompresses to `decompressed` bytes of zeros."""
    return _zip_bomb({}, "word/document.xml", decompressed)


def _zip_bomb(parts: dict[str, str], bomb: str, decompressed: int) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("[Content_Types].xml", "<Types/>")
        for name, text in parts.items():
            archive.writestr(name, text)
        with archive.open(bomb, "w") as member:
            chunk = b"0" * (1 << 20)
            left = decompressed
            while left > 0:
                member.write(chunk[: min(left, len(chunk))])
                left -= len(chunk)
    return out.getvalue()


def describe_keys(described: dict[str, Any]) -> set[str]:
    return set(described)
