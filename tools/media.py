"""Where the media of tool results live on this site: the storage names tools write them under and
the URLs the page trusts. The media view (agents/web/views/media.py) serves only these paths, to whoever may
see the session named in them; the timeline (agents/web) shows only these URLs inline.

    images/<session id>/<32 hex>.(png|jpg|gif|webp)   shown inline; raster formats only, never SVG
    files/<session id>/<32 hex>/<name>                always a download (Content-Disposition: attachment)
"""

from __future__ import annotations

import re
import uuid

from django.conf import settings

from aptix.ids import HEX_ID

# images/<session id>/<random id>.<ext>: drawn by image_gen, or shown by an MCP tool, in that
# session; only raster formats (tools/mcp/rich.py checks them with Pillow), never SVG.
IMAGE_PATH = re.compile(r"images/([0-9a-f]{32})/[0-9a-f]{32}\.(png|jpg|gif|webp)")
IMAGE_TYPES = {"png": "image/png", "jpg": "image/jpeg", "gif": "image/gif", "webp": "image/webp"}
# files/<session id>/<random id>/<name>: audio and other blobs of MCP results, only ever downloaded.
FILE_PATH = re.compile(r"files/([0-9a-f]{32})/[0-9a-f]{32}/([A-Za-z0-9._-]{1,100})")


def image_name(session_id: str | None, extension: str) -> str:
    """A new image's storage name, under the session it was made for (a bad or missing id: under
    images/ alone, which the media view serves to nobody)."""
    folder = f"images/{session_id}" if session_id and HEX_ID.fullmatch(str(session_id)) else "images"
    return f"{folder}/{uuid.uuid4().hex}.{extension}"


def _site_path(url: str) -> str | None:
    """The storage name a URL of this site's media names (None for any other URL)."""
    prefix = "/" + settings.MEDIA_URL.strip("/") + "/"
    return url[len(prefix) :] if url.startswith(prefix) else None


def is_site_image(url: str) -> bool:
    """Whether `url` is an image this site serves (so the page may show it inline): exactly the
    media view's image path, nothing else under the site (`/logout/` as an image would sign every
    viewer out), no other kind of file."""
    path = _site_path(url)
    return path is not None and IMAGE_PATH.fullmatch(path) is not None


def is_site_file(url: str) -> bool:
    """Whether `url` is a file this site serves (a download)."""
    path = _site_path(url)
    return path is not None and FILE_PATH.fullmatch(path) is not None
