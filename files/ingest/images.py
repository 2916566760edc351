"""Images: checked by decoding them with Pillow (a file that only starts like an image is refused),
with a size limit against decompression bombs, and a thumbnail for the message it is attached to."""

from __future__ import annotations

import warnings
from pathlib import Path

from ..errors import unreadable
from .common import first_line
from .ingested import Ingested

MAX_PIXELS = 50_000_000  # about 7000 × 7000
THUMBNAIL = (256, 256)


def ingest_image(path: str, workdir: Path) -> Ingested:
    from PIL import Image

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            with Image.open(path) as image:
                width, height = image.size
                if width * height > MAX_PIXELS:
                    raise unreadable(
                        f"The image is {width} × {height} pixels; at most {MAX_PIXELS:,} pixels are accepted."
                    )
                image.verify()
            with Image.open(path) as image:
                image.seek(0)
                thumbnail = image.convert("RGBA") if image.mode not in ("RGB", "RGBA") else image.copy()
    except (OSError, ValueError, SyntaxError, Image.DecompressionBombWarning, Image.DecompressionBombError) as exc:
        raise unreadable(f"The image could not be read: {first_line(exc)}") from None
    thumbnail.thumbnail(THUMBNAIL)
    target = workdir / "thumb.png"
    thumbnail.save(target, "PNG")
    return Ingested(
        data_path=target, data_suffix="thumb.png", preview={"width": width, "height": height, "thumbnail": True}
    )
