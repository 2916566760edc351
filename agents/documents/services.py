"""The only writers and the reads of documents. Every call names the session it acts in, and a
document of another session is not found: the tools take the session from their context, the views
from `session_get` (the user's own), so nobody reaches another session's document."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from asgiref.sync import sync_to_async
from django.conf import settings
from django.db import transaction
from django.db.models import Exists, F

from ..models import Document, DocumentVersion

TITLE_MAX = 200
SUMMARY_MAX = 500


class DocumentError(ValueError):
    """A write or read the caller must be told about (too long, no title, not found); the message
    says what to change."""


class DocumentNotFoundError(DocumentError):
    """No such document (or version) in this session."""


def _check(title: str, content: str) -> str:
    title = " ".join((title or "").split())
    if not title:
        raise DocumentError("A document needs a non-empty 'title'.")
    if len(title) > TITLE_MAX:
        raise DocumentError(f"A document's title has at most {TITLE_MAX} characters.")
    limit = settings.APTIX_DOCUMENT_MAX_CHARS
    if len(content) > limit:
        raise DocumentError(
            f"The document is {len(content):,} characters; a version may have at most {limit:,}. "
            "Shorten it or split it into several documents."
        )
    return title


def document_write(
    *,
    session_id: str,
    title: str,
    content: str,
    document_id: str | None = None,
    summary: str = "",
    author: str = DocumentVersion.Author.AGENT,
    user: Any = None,
    turn_id: str | None = None,
) -> DocumentVersion:
    """A new version: of the document `document_id` of this session, or the first of a new document.
    Earlier versions stay as they were."""
    title = _check(title, content)
    with transaction.atomic():
        if document_id:
            document = Document.objects.select_for_update().filter(pk=document_id, session_id=session_id).first()
            if document is None:
                raise DocumentNotFoundError(f"No document {document_id!r} in this session.")
        else:
            document = Document(session_id=session_id, title=title)
        document.title = title
        document.version += 1
        document.save()
        return DocumentVersion.objects.create(
            document=document,
            number=document.version,
            title=title,
            content=content,
            summary=(summary or "").strip()[:SUMMARY_MAX],
            author=author,
            user=user if author == DocumentVersion.Author.USER else None,
            turn_id=turn_id,
        )


def document_get(*, session_id: str, document_id: str) -> Document:
    document = Document.objects.filter(pk=document_id, session_id=session_id).first()
    if document is None:
        raise DocumentNotFoundError(f"No document {document_id!r} in this session.")
    return document


def document_version(*, session_id: str, document_id: str, version: int | None = None) -> DocumentVersion:
    """A version (the current one without `version`; versions count from 1) of a document of this
    session."""
    document = document_get(session_id=session_id, document_id=document_id)
    number = document.version if version is None else version
    row = DocumentVersion.objects.select_related("user").filter(document=document, number=number).first()
    if row is None:
        raise DocumentNotFoundError(f"Document {document_id!r} has versions 1 to {document.version}, not {number}.")
    row.document = document  # read already
    return row


def document_versions(*, document: Document) -> list[DocumentVersion]:
    """Every version of `document`, oldest first, without their text."""
    return list(DocumentVersion.objects.filter(document=document).defer("content").select_related("user"))


def documents_of(*, session_id: str) -> list[Document]:
    """The session's documents, the most recently changed first."""
    return list(Document.objects.filter(session_id=session_id).order_by("-updated_at", "-created_at"))


def documents_of_sessions(*, session_ids: list[str]) -> list[Document]:
    """The documents of these sessions (the caller's own: the MCP server's resources), the most
    recently changed first."""
    return list(Document.objects.filter(session_id__in=session_ids).order_by("-updated_at", "-created_at"))


def document_owned(*, document_id: str) -> Document | None:
    """The document `document_id` with its session loaded (for the caller to check whose it is), or None."""
    return Document.objects.select_related("session").filter(pk=document_id).first()


def documents_current(*, session_id: str) -> list[DocumentVersion]:
    """The current version of each of the session's documents, the most recently changed first."""
    return list(
        DocumentVersion.objects.filter(document__session_id=session_id, number=F("document__version"))
        .select_related("document", "user")
        .order_by("-document__updated_at", "-document__created_at")
    )


def documents_exist(session: Any) -> Exists:
    """Whether the session (an OuterRef) has documents, as an expression to annotate another query with."""
    return Exists(Document.objects.filter(session_id=session))


def documents_purge(*, session_id: str) -> None:
    """Delete the session's documents and all their versions (the session is deleted)."""
    Document.objects.filter(session_id=session_id).delete()


@dataclass(frozen=True)
class DocumentStore:
    """What the document tools get by injection (tools never import agents): writes and reads in the
    session the tool's context names."""

    async def write(
        self, *, session_id: str, title: str, content: str, document_id: str | None, summary: str, turn_id: str | None
    ) -> DocumentVersion:
        return await sync_to_async(document_write)(
            session_id=session_id,
            title=title,
            content=content,
            document_id=document_id,
            summary=summary,
            turn_id=turn_id,
        )

    async def read(self, *, session_id: str, document_id: str, version: int | None) -> DocumentVersion:
        return await sync_to_async(document_version)(session_id=session_id, document_id=document_id, version=version)


document_store = DocumentStore()
