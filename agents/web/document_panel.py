"""The document panel beside the timeline (templates/agents/_document_panel.html): the session's
documents, one shown at a version (its Markdown rendered and sanitised as answers are), its versions
with who made each and when, and a diff between two of them. Built for the page, the panel's own
requests and the live stream (a `document.updated` event redraws it at the new version)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.template.loader import render_to_string

from agents.documents.render import diff_lines
from agents.documents.services import document_version, document_versions, documents_of

from .markdown import render_markdown

if TYPE_CHECKING:
    from agents.models import AgentSession

PANEL_TEMPLATE = "agents/_document_panel.html"


def panel_context(
    session: AgentSession,
    *,
    document_id: str | None = None,
    version: int | None = None,
    compare: tuple[int, int] | None = None,
) -> dict[str, Any]:
    """What the panel shows; DocumentNotFoundError for a document or version the session lacks."""
    documents = documents_of(session_id=session.id)
    context: dict[str, Any] = {"session": session, "documents": documents}
    if not documents and document_id is None:
        return context
    current = document_id or documents[0].id
    shown = document_version(session_id=session.id, document_id=current, version=version)
    document = shown.document
    context.update(
        document=document,
        shown=shown,
        html=render_markdown(shown.content),
        versions=list(reversed(document_versions(document=document))),  # the newest first
    )
    if compare is not None:
        before, after = (document_version(session_id=session.id, document_id=current, version=n) for n in compare)
        context.update(compare=compare, diff=diff_lines(before.content, after.content))
    return context


def render_panel(session: AgentSession, *, oob: bool = False, **options: Any) -> str:
    """The panel's HTML; `oob`: as the live stream's out-of-band swap of the page's panel."""
    return render_to_string(PANEL_TEMPLATE, {**panel_context(session, **options), "oob": oob})
