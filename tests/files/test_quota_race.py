"""Uploads at once against the storage quota: each is counted after the ones before it, holding the
owner's row (SQLite's IMMEDIATE transaction, PostgreSQL's row lock), so no burst stores past the quota.
Sixteen 200 kB uploads at once against 1 MiB were all stored (3.1×) while the check read the total
before any of them was written."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from django.db import connections

from files.errors import FileRefused
from files.models import SessionFile
from files.services import file_upload
from tests.helpers import async_db
from tests.helpers.files import csv_plain, uploaded

pytestmark = async_db

SIZE = 200_000


def test_uploads_at_once_never_store_past_the_quota(alice, settings):
    settings.APTIX_UPLOAD_USER_QUOTA = 1 << 20  # 1 MiB: five 200 kB files fit, a sixth does not
    settings.APTIX_UPLOAD_MAX_BYTES = 1 << 20
    data = csv_plain([(f"r{i:06d}", "Q1", float(i)) for i in range(20_000)])[:SIZE]
    data = data[: data.rindex(b"\n") + 1]

    def upload(n: int) -> str:
        try:
            file_upload(owner=alice, uploaded=uploaded(f"part{n}.csv", data))
            return "stored"
        except FileRefused as refused:
            assert refused.status == 413 and "quota" in refused.message
            return "refused"
        finally:
            connections.close_all()  # this thread's connection

    with ThreadPoolExecutor(max_workers=16) as pool:
        outcomes = list(pool.map(upload, range(16)))
    stored = SessionFile.objects.filter(owner=alice, deleted_at__isnull=True)
    assert outcomes.count("stored") == stored.count() == (1 << 20) // len(data)
    assert sum(f.size for f in stored) <= 1 << 20
