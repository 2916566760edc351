"""A document as the citation link shows it (/files/<id>/view?page=N#passage-<id>): its pages in
order, each with its passages (the ids knowledge_search cites), so that the link scrolls to the one
it names. A document without passages (a session's, not indexed) shows each page's text whole."""

from __future__ import annotations

from typing import Any

from aptix.ids import HEX_ID

from ..models import Passage, SessionFile
from ..search import document_pages


def project_document_get(file_id: str) -> SessionFile:
    """The live project document `file_id` (DoesNotExist otherwise). The caller checks that the user
    is a member of its project first."""
    if not isinstance(file_id, str) or not HEX_ID.fullmatch(file_id):
        raise SessionFile.DoesNotExist("No such file.")
    return SessionFile.objects.get(
        pk=file_id, project__isnull=False, kind=SessionFile.Kind.DOCUMENT, deleted_at__isnull=True
    )


def document_view(stored: SessionFile) -> list[dict[str, Any]]:
    """[{"number", "title", "passages": [{"id", "text"}]}] for each page of the document."""
    if stored.kind != SessionFile.Kind.DOCUMENT or not stored.data_name:
        return []
    by_page: dict[int, list[dict[str, str]]] = {}
    for passage in Passage.objects.filter(file_id=stored.pk).order_by("ordinal"):
        by_page.setdefault(passage.page, []).append({"id": passage.pk, "text": passage.text})
    pages = []
    for page in document_pages(stored.data_name):
        number = int(page["page"])
        passages = by_page.get(number) or [{"id": f"page{number}", "text": page.get("text") or ""}]
        pages.append({"number": number, "title": page.get("title") or "", "passages": passages})
    return pages
