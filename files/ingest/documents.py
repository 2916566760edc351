"""Documents: their text by page (PDF, through PDFium or pypdf) or by section (DOCX through python-docx, split
at headings; Markdown at headings; HTML at h1-h3; plain text in blocks of paragraphs), stored as one
JSON file that files_read pages through and searches (files/search.py)."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path
from typing import Any, ClassVar

from ..errors import unreadable
from ..sniff import Sniffed
from .common import check_unzipped_size, first_line
from .ingested import Ingested

TEXT_BLOCK_CHARS = 4000  # a plain-text "section": paragraphs up to about this many characters
MAX_PAGES = 5000
PREVIEW_CHARS = 300
HEADING = re.compile(r"^(#{1,3})\s+(.+?)\s*#*\s*$")


def ingest_document(path: str, sniffed: Sniffed, workdir: Path) -> Ingested:
    try:
        if sniffed.format == "pdf":
            pages = pdf_pages(path)
        elif sniffed.format == "docx":
            pages = _docx_sections(path)
        else:
            text = Path(path).read_text(encoding=sniffed.encoding or "utf-8", errors="replace").lstrip("\ufeff")
            if sniffed.format == "markdown":
                pages = _markdown_sections(text)
            elif sniffed.format == "html":
                pages = _html_sections(text)
            else:
                pages = _text_blocks(text)
    except (ValueError, OSError, KeyError) as exc:
        raise unreadable(f"The document could not be read: {first_line(exc)}") from None
    if len(pages) > MAX_PAGES:
        raise unreadable(f"The document has {len(pages)} pages or sections; at most {MAX_PAGES} are accepted.")
    pages = pages or [{"page": 1, "title": None, "text": ""}]
    target = workdir / "pages.json"
    target.write_text(json.dumps(pages, ensure_ascii=False), encoding="utf-8")
    opening = " ".join(" ".join(p["text"].split()) for p in pages[:2])[:PREVIEW_CHARS]
    return Ingested(
        data_path=target,
        data_suffix="pages.json",
        pages=len(pages),
        preview={"pages": len(pages), "excerpt": opening},
    )


def _page(number: int, title: str | None, text: str) -> dict[str, Any]:
    return {"page": number, "title": title, "text": text.strip()}


def pdf_pages(path: str) -> list[dict[str, Any]]:
    """A PDF's text page by page: through PDFium (pypdfium2, fast) where it is installed, else pypdf."""
    try:
        import pypdfium2
    except ImportError:
        return _pdf_pages_pypdf(path)
    try:
        document = pypdfium2.PdfDocument(path)
    except pypdfium2.PdfiumError as exc:  # encrypted, damaged or not a PDF after all
        raise ValueError(str(exc)) from None
    try:
        count = len(document)
        if count > MAX_PAGES:
            raise ValueError(f"it has {count} pages; at most {MAX_PAGES} are accepted")
        pages = []
        for index in range(count):
            page = document[index]
            text = page.get_textpage()
            pages.append(_page(index + 1, None, text.get_text_range().replace("\r\n", "\n")))
            text.close()
            page.close()
        return pages
    finally:
        document.close()


def _pdf_pages_pypdf(path: str) -> list[dict[str, Any]]:
    from pypdf import PdfReader
    from pypdf.errors import PdfReadError

    try:
        reader = PdfReader(path)
        if reader.is_encrypted:
            raise ValueError("it is encrypted")
        count = len(reader.pages)
        if count > MAX_PAGES:
            raise ValueError(f"it has {count} pages; at most {MAX_PAGES} are accepted")
        return [_page(i + 1, None, page.extract_text() or "") for i, page in enumerate(reader.pages)]
    except PdfReadError as exc:
        raise ValueError(str(exc)) from None


def _docx_sections(path: str) -> list[dict[str, Any]]:
    import zipfile

    import docx
    from docx.opc.exceptions import OpcError
    from lxml.etree import LxmlError

    check_unzipped_size(path)
    try:
        document = docx.Document(path)
    except (zipfile.BadZipFile, LxmlError, OpcError) as exc:
        # A damaged archive (a CRC that fails, a size that lies), XML that does not parse or expands
        # entities past lxml's limit, a part the package names but lacks.
        raise ValueError(str(exc)) from None
    sections: list[dict[str, Any]] = []
    title: str | None = None
    lines: list[str] = []
    for paragraph in document.paragraphs:
        style = (paragraph.style.name if paragraph.style is not None else "") or ""
        if style.startswith(("Heading", "Title")) and paragraph.text.strip():
            if lines or title:
                sections.append(_page(len(sections) + 1, title, "\n".join(lines)))
            title, lines = paragraph.text.strip(), []
        elif paragraph.text.strip():
            lines.append(paragraph.text)
    for table in document.tables:  # tables' text after the paragraphs, row by row
        lines += [" | ".join(cell.text for cell in row.cells) for row in table.rows]
    if lines or title:
        sections.append(_page(len(sections) + 1, title, "\n".join(lines)))
    return sections


def _markdown_sections(text: str) -> list[dict[str, Any]]:
    sections: list[dict[str, Any]] = []
    title: str | None = None
    lines: list[str] = []
    fenced = False
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
        match = None if fenced else HEADING.match(line)
        if match:
            if (lines and any(x.strip() for x in lines)) or title:
                sections.append(_page(len(sections) + 1, title, "\n".join(lines)))
            title, lines = match.group(2), []
        else:
            lines.append(line)
    if any(x.strip() for x in lines) or title:
        sections.append(_page(len(sections) + 1, title, "\n".join(lines)))
    return sections


def _text_blocks(text: str) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    current: list[str] = []
    size = 0
    for paragraph in re.split(r"\n\s*\n", text):
        if current and size + len(paragraph) > TEXT_BLOCK_CHARS:
            blocks.append(_page(len(blocks) + 1, None, "\n\n".join(current)))
            current, size = [], 0
        current.append(paragraph)
        size += len(paragraph)
    if any(p.strip() for p in current):
        blocks.append(_page(len(blocks) + 1, None, "\n\n".join(current)))
    return blocks


class _Sections(HTMLParser):
    """An HTML page's visible text, split at h1-h3 (script and style skipped)."""

    SKIP: ClassVar[set[str]] = {"script", "style", "noscript", "template"}
    BLOCKS: ClassVar[set[str]] = {"p", "div", "li", "tr", "br", "section", "article", "h4", "h5", "h6", "pre", "table"}

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.sections: list[dict[str, Any]] = []
        self.title: str | None = None
        self.parts: list[str] = []
        self.heading: list[str] | None = None
        self.skipping = 0

    def handle_starttag(self, tag: str, attrs: Any) -> None:
        if tag in self.SKIP:
            self.skipping += 1
        elif tag in ("h1", "h2", "h3"):
            self.close_section()
            self.heading = []
        elif tag in self.BLOCKS:
            self.parts.append("\n")

    def handle_endtag(self, tag: str) -> None:
        if tag in self.SKIP:
            self.skipping = max(self.skipping - 1, 0)
        elif tag in ("h1", "h2", "h3") and self.heading is not None:
            self.title = " ".join("".join(self.heading).split()) or None
            self.heading = None

    def handle_data(self, data: str) -> None:
        if self.skipping:
            return
        (self.heading if self.heading is not None else self.parts).append(data)

    def close_section(self) -> None:
        text = re.sub(r"\n\s*\n+", "\n\n", "".join(self.parts)).strip()
        if text or self.title:
            self.sections.append(_page(len(self.sections) + 1, self.title, text))
        self.title, self.parts = None, []


def _html_sections(text: str) -> list[dict[str, Any]]:
    parser = _Sections()
    parser.feed(text)
    parser.close()
    parser.close_section()
    return parser.sections
