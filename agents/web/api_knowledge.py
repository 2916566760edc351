"""Knowledge search on the API (bearer token; files/knowledge/): `POST /api/v1/projects/<id>/search`
`{"query", "topK"}` → `{"passages": [{"id", "file", "page", "text", "score", "link"}], "mode":
"hybrid"|"bm25"}` (`note` when an embedding model is configured but its vectors are still being made).
A project the user is not a member of is a 404 like one that does not exist; a bad field a 400 naming
it."""

from __future__ import annotations

from typing import Any

from asgiref.sync import sync_to_async
from django.http import HttpRequest, JsonResponse
from django.views.decorators.csrf import csrf_exempt

from files.knowledge import search
from projects.services import ProjectNotFoundError, project_get
from tools.builtin.knowledge_search import TOP_K_DEFAULT, TOP_K_MAX, citation_link

from .api_support import ApiError, authenticate, json_body

NOT_FOUND = "No project with this id."
FIELDS = ("query", "topK")
QUERY_MAX = 2_000
ERROR_QUERY = "'query' is required: the words or question to search the project's documents for."
ERROR_QUERY_LONG = f"'query' has at most {QUERY_MAX} characters."
ERROR_TOP_K = f"'topK' must be a whole number from 1 to {TOP_K_MAX}."


def _search(user: Any, project_id: str, body: dict[str, Any]) -> dict[str, Any]:
    try:
        project = project_get(user=user, project_id=project_id)
    except ProjectNotFoundError:
        raise ApiError(404, NOT_FOUND, "id") from None
    if unknown := sorted(set(body) - set(FIELDS)):
        raise ApiError(400, f"Unknown field '{unknown[0]}': a search has {', '.join(FIELDS)}.", unknown[0])
    query, top_k = body.get("query"), body.get("topK", TOP_K_DEFAULT)
    if not isinstance(query, str) or not query.strip():
        raise ApiError(400, ERROR_QUERY, "query")
    if len(query) > QUERY_MAX:
        raise ApiError(400, ERROR_QUERY_LONG, "query")
    if isinstance(top_k, bool) or not isinstance(top_k, int) or not 1 <= top_k <= TOP_K_MAX:
        raise ApiError(400, ERROR_TOP_K, "topK")
    found = search([project.pk], query.strip(), top_k)
    answer: dict[str, Any] = {
        "passages": [
            {
                "id": hit.id,
                "file": {"id": hit.file_id, "name": hit.file_name},
                "page": hit.page,
                "title": hit.title,
                "text": hit.text,
                "score": hit.score,
                "link": citation_link(hit),
            }
            for hit in found.hits
        ],
        "mode": found.mode,
    }
    if found.note:
        answer["note"] = found.note
    return answer


@csrf_exempt
async def project_search_api(request: HttpRequest, project_id: str) -> JsonResponse:
    try:
        user = await authenticate(request)
        if request.method != "POST":
            raise ApiError(405, "Use POST.")
        return JsonResponse(await sync_to_async(_search)(user, project_id, json_body(request.body)))
    except ApiError as exc:
        return exc.response()
