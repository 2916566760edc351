"""files_read: a page (or section) of a document attached to the session, or the passages that best
match a few words (BM25, files/search.py). Read-only."""

from __future__ import annotations

import asyncio
from typing import ClassVar

from files.models import SessionFile
from files.search import best_passages, document_pages

from ..base import AgentTool, InvokeResult, ToolContext, function_schema
from .files_support import ArgumentsError, arguments, budget, cut, files_for, find_file

PASSAGES = 5
ERROR_FILE = 'files_read requires "file": a document\'s id or name as files_list gives it.'
ERROR_PAGE = '"page" must be a whole number of 1 or more.'
ERROR_QUERY = '"query" must be a few words to search for.'


class FilesReadTool(AgentTool):
    TOOL_NAME: ClassVar[str] = "files_read"
    TOOL_USAGE_METADATA: ClassVar[str] = (
        "Read the attached documents with files_read: give a page to read it, or a query (a few words) to get the "
        "passages that match best, with their pages. Quote what you use and say which page it is on."
    )
    NEEDS_SESSION_FILES: ClassVar[bool] = True
    is_tool_fully_executed_on_server = True

    @staticmethod
    def get_schema() -> dict:
        return function_schema(
            FilesReadTool.TOOL_NAME,
            "Reads a document attached to this session: one page (or section), or the passages that best match a "
            "query. Without either, the first page.",
            {
                "file": {"type": "string", "description": "The document's id or name (from files_list)."},
                "query": {"type": "string", "description": "Words to search the document for."},
                "page": {"type": "integer", "minimum": 1, "description": "The page or section to read."},
            },
            required=["file"],
        )

    async def execute(self, arguments_json: str | None, context: ToolContext | None) -> InvokeResult:
        try:
            args = arguments(arguments_json, '{"file": "report.pdf", "query": "budget"}')
        except ArgumentsError as exc:
            return InvokeResult.from_error(str(exc))
        wanted, query, page = args.get("file"), args.get("query"), args.get("page")
        if not isinstance(wanted, str) or not wanted.strip():
            return InvokeResult.from_error(ERROR_FILE)
        if page is not None and (isinstance(page, bool) or not isinstance(page, int) or page < 1):
            return InvokeResult.from_error(ERROR_PAGE)
        if query is not None and not isinstance(query, str):
            return InvokeResult.from_error(ERROR_QUERY)
        files = await files_for(context)
        if isinstance(files, InvokeResult):
            return files
        upload = find_file(files, wanted)
        if upload is None:
            names = ", ".join(f.name for f in files if f.kind == "document") or "none"
            return InvokeResult.from_error(f"No document “{wanted}” in this session. Its documents: {names}.")
        if upload.kind != "document":
            tool = "files_query over its tables" if upload.kind == "table" else "nothing: it is an image"
            return InvokeResult.from_error(f"“{upload.name}” is a {upload.kind}, not a document; read it with {tool}.")
        if query and query.strip() and page is None:
            return InvokeResult.create(await asyncio.to_thread(_passages_text, upload, query))
        return InvokeResult.create(await asyncio.to_thread(_page_text, upload, page or 1))


def _page_text(upload: SessionFile, number: int) -> str:
    """Page (a PDF's) or section (another document's) `number`; the `page` argument counts either."""
    pages, unit = document_pages(upload.data_name), upload.page_unit
    if number > len(pages):
        return f"“{upload.name}” has {len(pages)} {unit}{'s' if len(pages) != 1 else ''}; there is no {unit} {number}."
    page = pages[number - 1]
    title = f" — {page['title']}" if page.get("title") else ""
    header = f"“{upload.name}”, {unit} {number} of {len(pages)}{title}\n\n"
    text, was_cut = cut(page["text"] or f"(no text in this {unit})", budget() - len(header))
    return header + text + (f"\n\n[{unit} cut to the result size limit]" if was_cut else "")


def _passages_text(upload: SessionFile, query: str) -> str:
    found = best_passages(upload.data_name, query, PASSAGES)
    if not found:
        return f"Nothing in “{upload.name}” matches “{query}”. Read it by page instead."
    parts = [f"The passages of “{upload.name}” that best match “{query}”, best first:"]
    room = budget() - len(parts[0])
    share = max(room // len(found) - 40, 100)
    for passage in found:
        title = f" — {passage.title}" if passage.title else ""
        text, _ = cut(passage.text, share)
        parts.append(f"[{upload.page_unit} {passage.page}{title}]\n{text}")
    return "\n\n".join(parts)
