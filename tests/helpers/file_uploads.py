"""Files the upload tests send: a small sales table (CSV), a PNG, an executable renamed to look like
a table; and uploading one as a user (the files services, as the upload views do)."""

from __future__ import annotations

import io

from django.core.files.uploadedfile import SimpleUploadedFile

SALES_CSV = b"region,q2,q3\nNorth,100,120\nSouth,80,120\nEast,50,55\nWest,90,81\n"
# A Linux executable's magic bytes under a table's name: refused for its content (415).
ELF_AS_CSV = b"\x7fELF\x02\x01\x01\x00" + b"\x00" * 120


def png_bytes(width: int = 8, height: int = 6, colour: tuple[int, int, int] = (200, 40, 40)) -> bytes:
    from PIL import Image

    out = io.BytesIO()
    Image.new("RGB", (width, height), colour).save(out, format="PNG")
    return out.getvalue()


def uploaded(name: str = "sales.csv", content: bytes = SALES_CSV) -> SimpleUploadedFile:
    return SimpleUploadedFile(name, content, content_type="application/octet-stream")


def upload_as(user, name: str = "sales.csv", content: bytes = SALES_CSV, session=None):
    """`user`'s upload of `content` as `name` (a SessionFile), through the files services."""
    from files.services import file_upload

    return file_upload(owner=user, uploaded=uploaded(name, content), session=session)
