"""Knowledge search over a project's documents (docs/workspace.md#knowledge-search).

A project's document is split into passages (files/search.py's splitting: by page and heading) and
indexed in the background as it arrives (indexing.py); a search ranks the passages of the projects it
is given with BM25 (ranking.py), fused by reciprocal rank with embeddings when an embedding model is
configured (embeddings.py, search.py).

The entry points the rest of the project calls:
    index_file(file)   a project document arrived (after its row is saved): index it in the background
    forget_file(file)  a project file is deleted: its passages go, searches no longer find it
    search(project_ids, query, top_k)  the best passages, for the tool and the API
"""

from .indexing import forget_file, index_file, index_progress, start_knowledge_indexer, sweep_pending, wait_idle
from .search import Hit, SearchResult, search
from .viewing import document_view, project_document_get

__all__ = [
    "Hit",
    "SearchResult",
    "document_view",
    "forget_file",
    "index_file",
    "index_progress",
    "project_document_get",
    "search",
    "start_knowledge_indexer",
    "sweep_pending",
    "wait_idle",
]
