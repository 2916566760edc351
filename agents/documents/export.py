"""A document as JSON: the API's answer (agents/web/api_documents.py) and the session export's
`documents` (agents/web/views/export.py) share this shape."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from ..models import DocumentVersion
from .services import document_versions, documents_current


def _iso(moment: datetime | None) -> str | None:
    return moment.isoformat() if moment else None


def document_json(row: DocumentVersion) -> dict[str, Any]:
    """The version `row` with its document's list of versions (who made each, when, in which turn)."""
    versions = [
        {
            "version": v.number,
            "title": v.title,
            "author": v.author,
            "user": v.user.get_username() if v.user else None,
            "turnId": v.turn_id,
            "summary": v.summary,
            "createdAt": _iso(v.created_at),
        }
        for v in document_versions(document=row.document)
    ]
    return {
        "documentId": row.document_id,
        "title": row.title,
        "version": row.number,
        "currentVersion": row.document.version,
        "author": row.author,
        "content": row.content,
        "updatedAt": _iso(row.document.updated_at),
        "versions": versions,
    }


def documents_export(*, session_id: str) -> list[dict[str, Any]]:
    """Every document of the session at its current version, the most recently changed first."""
    return [document_json(row) for row in documents_current(session_id=session_id)]
