"""Storage that is not a local directory (object storage shared by several machines): uploads go
through Django's storage API, and a query or a search reads a local copy made once per process."""

from __future__ import annotations

import pytest
from asgiref.sync import async_to_sync
from django.core.files.storage import InMemoryStorage

from files import storage
from files.sandbox import run_query, session_tables
from files.search import best_passages
from files.services import file_delete, file_upload, session_files
from tests.helpers.files import csv_plain, pdf_bytes, uploaded

pytestmark = pytest.mark.django_db


class RemoteStorage:
    """A storage without local paths, as an S3 backend is: Django's in-memory storage behind
    Storage.path's own refusal."""

    def __init__(self) -> None:
        self.backend = InMemoryStorage()

    def __getattr__(self, name):
        return getattr(self.backend, name)

    def path(self, name):
        raise NotImplementedError("This backend doesn't support absolute paths.")


@pytest.fixture
def remote(monkeypatch):
    backend = RemoteStorage()
    monkeypatch.setattr(storage, "default_storage", backend)
    return backend


def test_tables_and_documents_are_read_from_a_local_copy(remote, alice, make_session, settings):
    session = async_to_sync(make_session)()
    table = file_upload(owner=alice, uploaded=uploaded("sales.csv", csv_plain()), session=session)
    memo = file_upload(owner=alice, uploaded=uploaded("memo.pdf", pdf_bytes(["object storage"])), session=session)
    assert remote.exists(table.data_name) and remote.exists(memo.storage_name)
    cached = settings.FILES_CACHE_DIR / table.data_name
    assert not cached.exists()
    result = run_query(session_tables(session_files(session.pk)), "SELECT count(*) FROM sales", max_rows=1)
    assert result.rows == [(6,)] and cached.is_file()
    assert best_passages(memo.data_name, "storage")[0].page == 1
    file_delete(alice, table.pk)
    assert not remote.exists(table.data_name) and not cached.exists()
