"""knowledge_search: the passages of the session's project documents that best match a query
(files/knowledge/), each with its file, page, passage id, score and a link that opens the file at it,
so that the answer can cite them. Offered in every session in a project, whatever the mode's tool
policy says (`NEEDS_PROJECT_KNOWLEDGE`); which projects it searches is the run's to say (the call's
context, `knowledge_projects`: projects/knowledge_scope.py), never an argument's."""

from __future__ import annotations

from typing import ClassVar

from asgiref.sync import sync_to_async

from files.knowledge import Hit, SearchResult, search

from ..base import AgentTool, InvokeResult, ToolContext, function_schema
from .files_support import ArgumentsError, arguments, budget, cut

TOP_K_DEFAULT = 5
TOP_K_MAX = 20
ERROR_QUERY = 'knowledge_search requires "query": a few words or a question to search the project\'s documents for.'
ERROR_TOP_K = f'"top_k" must be a whole number from 1 to {TOP_K_MAX}.'
ERROR_NO_PROJECT = "This session is in no project whose documents you may search."


def citation_link(hit: Hit) -> str:
    """Where a citation of the passage opens its file: at its page, scrolled to the passage."""
    return f"/files/{hit.file_id}/view?page={hit.page}#passage-{hit.id}"


class KnowledgeSearchTool(AgentTool):
    TOOL_NAME: ClassVar[str] = "knowledge_search"
    TOOL_USAGE_METADATA: ClassVar[str] = (
        "Search the project's documents with knowledge_search before answering a question they may cover "
        "(policies, procedures, reports). Answer from the passages it returns and cite each one you use as "
        "[file, page N](link) with the link it gives."
    )
    NEEDS_PROJECT_KNOWLEDGE: ClassVar[bool] = True
    is_tool_fully_executed_on_server = True

    @staticmethod
    def get_schema() -> dict:
        return function_schema(
            KnowledgeSearchTool.TOOL_NAME,
            "Searches the documents of this session's project and returns the passages that best match the "
            "query, best first, each with its file, page, passage id and a link to cite.",
            {
                "query": {"type": "string", "description": "What to look for: a question or a few words."},
                "top_k": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": TOP_K_MAX,
                    "description": f"How many passages to return (default {TOP_K_DEFAULT}).",
                },
            },
            required=["query"],
        )

    async def execute(self, arguments_json: str | None, context: ToolContext | None) -> InvokeResult:
        try:
            args = arguments(arguments_json, '{"query": "travel expenses limit"}')
        except ArgumentsError as exc:
            return InvokeResult.from_error(str(exc))
        query, top_k = args.get("query"), args.get("top_k", TOP_K_DEFAULT)
        if not isinstance(query, str) or not query.strip():
            return InvokeResult.from_error(ERROR_QUERY)
        if isinstance(top_k, bool) or not isinstance(top_k, int) or not 1 <= top_k <= TOP_K_MAX:
            return InvokeResult.from_error(ERROR_TOP_K)
        projects = list(getattr(context, "knowledge_projects", ()) or ())
        if not projects:
            return InvokeResult.from_error(ERROR_NO_PROJECT)
        found = await sync_to_async(search)(projects, query.strip(), top_k)
        cited = tuple((f"{hit.file_name}, {hit.unit} {hit.page}", citation_link(hit)) for hit in found.hits)
        return InvokeResult(successful=True, result=result_text(query.strip(), found), citations=cited)


def result_text(query: str, found: SearchResult) -> str:
    """The passages as the model reads and cites them."""
    how = "hybrid: BM25 and embeddings" if found.mode == "hybrid" else "bm25"
    if not found.hits:
        return f"No passage of the project's documents matches “{query}” (ranking: {how})."
    head = f"The passages of the project's documents that best match “{query}”, best first (ranking: {how})."
    if found.note:
        head += f" {found.note}"
    parts = [head]
    share = max((budget() - len(head)) // len(found.hits) - 200, 100)
    for number, hit in enumerate(found.hits, start=1):
        title = f" — {hit.title}" if hit.title else ""
        text, _ = cut(hit.text, share)
        parts.append(
            f"[{number}] “{hit.file_name}”, {hit.unit} {hit.page}{title} (passage {hit.id}, score {hit.score:g})\n"
            f"cite: [{hit.file_name}, {hit.unit} {hit.page}]({citation_link(hit)})\n{text}"
        )
    return "\n\n".join(parts)
