from __future__ import annotations

import re
from pathlib import Path

from django.conf import settings
from django.contrib.auth.views import redirect_to_login
from django.http import FileResponse, Http404, JsonResponse
from django.views.decorators.http import require_GET

from aptix.bearer import RateLimited, bearer_user

# images/<session id>/<random id>.png: written by image_gen for the session it drew in.
IMAGE_PATH = re.compile(r"images/([0-9a-f]{32})/[0-9a-f]{32}\.png")


@require_GET
def media(request, path: str):
    """Generated images, to whoever may see the session they were drawn in: its owner signed in, or
    a program with the owner's API token (`Authorization: Bearer …`). Anyone else gets a 404, as for
    a session of someone else."""
    from agents.sessions import SessionNotFoundError, session_get

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
    match = IMAGE_PATH.fullmatch(path)
    if match is None:
        raise Http404("No such file.")
    try:
        session_get(user=user, session_id=match.group(1))
    except SessionNotFoundError:
        raise Http404("No such file.") from None
    target = Path(settings.MEDIA_ROOT) / path
    if not target.is_file():
        raise Http404("No such file.")
    response = FileResponse(target.open("rb"), content_type="image/png")
    response["Cache-Control"] = "private, max-age=86400"
    return response
