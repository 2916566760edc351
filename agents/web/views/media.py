"""Media of sessions (generated images, the images and files of MCP results), served to whoever may
see the session they were made in."""

from __future__ import annotations

from pathlib import Path

from django.conf import settings
from django.contrib.auth.views import redirect_to_login
from django.http import FileResponse, Http404, HttpRequest, JsonResponse
from django.http.response import HttpResponseBase
from django.views.decorators.http import require_GET

from agents.sessions import SessionNotFoundError, session_get
from aptix.bearer import RateLimited, bearer_user
from tools.media import FILE_PATH, IMAGE_PATH, IMAGE_TYPES


@require_GET
def media(request: HttpRequest, path: str) -> HttpResponseBase:
    """Generated images and the images and files of MCP results, to whoever may see the session they
    were made in: its owner signed in, or a program with the owner's API token (`Authorization:
    Bearer …`). Anyone else gets a 404, as for a session of someone else. Files are downloads."""
    user = request.user if request.user.is_authenticated else None
    if user is None and "Authorization" in request.headers:
        try:
            user = bearer_user(request)  # within the rate limits of tokens (aptix/bearer.py)
        except RateLimited as exc:
            refused = JsonResponse({"error": {"message": exc.limited.message}}, status=429)
            refused["Retry-After"] = str(exc.limited.retry_after)
            return refused
        if user is None:
            return JsonResponse({"error": {"message": "Invalid or missing API token."}}, status=401)
    if user is None:
        return redirect_to_login(request.get_full_path())
    match = IMAGE_PATH.fullmatch(path) or FILE_PATH.fullmatch(path)
    if match is None:
        raise Http404("No such file.")
    try:
        session_get(user=user, session_id=match.group(1), read=True)
    except SessionNotFoundError:
        raise Http404("No such file.") from None
    target = Path(settings.MEDIA_ROOT) / path
    if not target.is_file():
        raise Http404("No such file.")
    if match.re is FILE_PATH:  # never rendered inline, whatever the server said it was
        response = FileResponse(
            target.open("rb"), as_attachment=True, filename=match.group(2), content_type="application/octet-stream"
        )
    else:
        response = FileResponse(target.open("rb"), content_type=IMAGE_TYPES[match.group(2)])
    response["Cache-Control"] = "private, max-age=86400"
    response["X-Content-Type-Options"] = "nosniff"
    return response
