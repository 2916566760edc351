"""Uploads for the workspace's files tests (the files' makers are tests/helpers/files.py): a small
sales table by quarter whose fastest-growing region is North, and uploading a file as a user through
the files services, as the upload views do."""

from __future__ import annotations

from tests.helpers.files import uploaded

SALES_CSV = b"region,q2,q3\nNorth,100,150\nSouth,80,120\nEast,50,55\nWest,90,81\n"


def upload_as(user, name: str = "sales.csv", content: bytes = SALES_CSV, session=None):
    """`user`'s upload of `content` as `name` (a SessionFile), through the files services."""
    from files.services import file_upload

    return file_upload(owner=user, uploaded=uploaded(name, content), session=session)
