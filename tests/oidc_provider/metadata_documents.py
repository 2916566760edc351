"""Client ID Metadata Documents at the test provider (django-oauth-toolkit has none), off until a test
turns them on (`POST /test/metadata-documents/`): the authorization server metadata then says
`client_id_metadata_document_supported: true`, and an authorization request whose `client_id` is an
http(s) URL makes the provider fetch that document, check its `client_id` is that URL, and register a
public client with the document's redirect URIs (what a real authorization server does per request,
done once here) before django-oauth-toolkit handles the request."""

from __future__ import annotations

import json
from collections.abc import Callable

import requests
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST

ENABLED = {"on": False}
FETCHED: list[str] = []  # the documents' URLs the provider fetched (the tests look)


@csrf_exempt
@require_POST
def toggle(request: HttpRequest) -> JsonResponse:
    ENABLED["on"] = bool(json.loads(request.body or b"{}").get("on", True))
    return JsonResponse({"on": ENABLED["on"], "fetched": FETCHED})


def _register(client_id: str) -> HttpResponse | None:
    from oauth2_provider.models import get_application_model

    FETCHED.append(client_id)
    try:
        document = requests.get(client_id, timeout=10).json()
    except (requests.RequestException, ValueError):
        return HttpResponseBadRequest("the client ID metadata document could not be fetched")
    if document.get("client_id") != client_id or not document.get("redirect_uris"):
        return HttpResponseBadRequest("the client ID metadata document does not name this client id")
    get_application_model().objects.update_or_create(
        client_id=client_id,
        defaults={
            "name": str(document.get("client_name") or client_id),
            "client_type": "public",
            "authorization_grant_type": "authorization-code",
            "redirect_uris": " ".join(document["redirect_uris"]),
            "algorithm": "RS256",
            "skip_authorization": True,
        },
    )
    return None


def middleware(get_response: Callable[[HttpRequest], HttpResponse]) -> Callable[[HttpRequest], HttpResponse]:
    def handle(request: HttpRequest) -> HttpResponse:
        if not ENABLED["on"]:
            return get_response(request)
        client_id = request.GET.get("client_id", "")
        by_url = request.path == "/o/authorize/" and client_id.startswith(("http://", "https://"))
        if by_url and (refused := _register(client_id)) is not None:
            return refused
        response = get_response(request)
        metadata = "openid-configuration" in request.path or "oauth-authorization-server" in request.path
        if metadata and response.status_code == 200:
            body = json.loads(response.content)
            body["client_id_metadata_document_supported"] = True
            return JsonResponse(body)
        return response

    return handle
