from __future__ import annotations

from pathlib import Path

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.http import FileResponse, Http404
from django.views.decorators.http import require_GET


@require_GET
@login_required
def media(request, path: str):
    """Generated images (image_gen) for signed-in users. Names are random 128-bit ids."""
    images = (Path(settings.MEDIA_ROOT) / "images").resolve()
    target = (Path(settings.MEDIA_ROOT) / path).resolve()
    if images not in target.parents or not target.is_file():
        raise Http404("No such file.")
    response = FileResponse(target.open("rb"), content_type="image/png")
    response["Cache-Control"] = "private, max-age=86400"
    return response
