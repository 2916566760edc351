"""The files services: upload, the API's description, ownership (anyone else's id is DoesNotExist),
attaching to a session, deleting and purging (content gone, metadata and audit kept), the quota."""

from __future__ import annotations

import pytest
from asgiref.sync import async_to_sync
from django.core.files.storage import default_storage

from agents.sessions import session_delete
from files.errors import FileRefused
from files.models import FileAudit, SessionFile
from files.services import (
    file_delete,
    file_describe,
    file_get,
    file_open,
    file_upload,
    files_attach,
    session_files,
    session_has_files,
)
from tests.helpers.files import csv_plain, uploaded

pytestmark = pytest.mark.django_db


@pytest.fixture
def session(make_session):
    return async_to_sync(make_session)()


def test_upload_describes_the_file_as_the_api_shows_it(alice):
    upload = file_upload(owner=alice, uploaded=uploaded("Q3 sales.csv", csv_plain()))
    described = file_describe(upload)
    assert set(described) == {"fileId", "name", "kind", "size", "sha256", "tables", "pages"}
    assert described["name"] == "Q3 sales.csv" and described["kind"] == "table"
    assert described["size"] == len(csv_plain()) and len(described["sha256"]) == 64
    assert described["tables"] == [
        {
            "name": "q3_sales",
            "columns": [
                {"name": "region", "type": "VARCHAR"},
                {"name": "quarter", "type": "VARCHAR"},
                {"name": "sales", "type": "DOUBLE"},
            ],
            "rows": 6,
        }
    ]
    assert described["pages"] is None
    with file_open(upload) as handle:
        assert handle.read() == csv_plain()
    assert upload.session is None  # the uploader's until it is first attached


def test_someone_elses_file_is_not_found(alice, bob):
    upload = file_upload(owner=alice, uploaded=uploaded("a.csv", csv_plain()))
    assert file_get(alice, upload.pk) == upload
    for user, file_id in ((bob, upload.pk), (alice, "0" * 32), (alice, "../etc/passwd")):
        with pytest.raises(SessionFile.DoesNotExist):
            file_get(user, file_id)
    with pytest.raises(SessionFile.DoesNotExist):
        file_delete(bob, upload.pk)
    assert file_get(alice, upload.pk)  # still there


def test_attach_makes_the_file_the_sessions_and_names_its_tables_uniquely(alice, session):
    first = file_upload(owner=alice, uploaded=uploaded("sales.csv", csv_plain()), session=session)
    second = file_upload(owner=alice, uploaded=uploaded("sales.csv", csv_plain()))
    assert not session_has_files(None)
    [attached] = files_attach(alice, [second.pk], session)
    assert attached.session_id == session.pk and attached.attached_at is not None
    assert [t["name"] for f in session_files(session.pk) for t in f.tables] == ["sales", "sales_2"]
    assert session_has_files(session.pk) and first.session_id == session.pk


def test_attach_refuses_a_file_of_another_user_or_session(alice, bob, session, make_session):
    other_session = async_to_sync(make_session)()
    bobs = file_upload(owner=bob, uploaded=uploaded("b.csv", csv_plain()))
    elsewhere = file_upload(owner=alice, uploaded=uploaded("e.csv", csv_plain()), session=other_session)
    mine = file_upload(owner=alice, uploaded=uploaded("m.csv", csv_plain()))
    for ids in ([bobs.pk], [elsewhere.pk], [mine.pk, "f" * 32], [mine.pk, "nope"]):
        with pytest.raises(SessionFile.DoesNotExist) as refused:
            files_attach(alice, ids, session)
        assert mine.pk not in str(refused.value) and bobs.pk not in str(refused.value)
    assert SessionFile.objects.get(pk=mine.pk).session_id is None  # all or nothing
    with pytest.raises(SessionFile.DoesNotExist):  # a session that is not the user's
        files_attach(bob, [bobs.pk], session)
    with pytest.raises(SessionFile.DoesNotExist):  # nor uploaded into one
        file_upload(owner=bob, uploaded=uploaded("b2.csv", csv_plain()), session=session)


def test_delete_drops_the_content_and_keeps_the_metadata_with_an_audit(alice, session):
    upload = file_upload(owner=alice, uploaded=uploaded("sales.csv", csv_plain()), session=session)
    names = [upload.storage_name, upload.data_name]
    assert all(default_storage.exists(n) for n in names)
    file_delete(alice, upload.pk)
    assert not any(default_storage.exists(n) for n in names)
    row = SessionFile.objects.get(pk=upload.pk)
    assert row.deleted_at is not None and row.sha256 == upload.sha256
    with pytest.raises(SessionFile.DoesNotExist):
        file_get(alice, upload.pk)
    assert session_files(session.pk) == []
    audit = list(FileAudit.objects.filter(file_id=upload.pk).order_by("at", "id").values_list("action", "actor_name"))
    assert audit == [("upload", "alice"), ("delete", "alice")]
    entry = FileAudit.objects.get(file_id=upload.pk, action="delete")
    assert (entry.name, entry.size, entry.sha256, entry.session_id) == (
        "sales.csv",
        upload.size,
        upload.sha256,
        session.pk,
    )


def test_deleting_the_session_purges_its_files_content(alice, session):
    upload = file_upload(owner=alice, uploaded=uploaded("sales.csv", csv_plain()), session=session)
    loose = file_upload(owner=alice, uploaded=uploaded("other.csv", csv_plain()))
    session_delete(session=session)
    assert not default_storage.exists(upload.storage_name) and not default_storage.exists(upload.data_name)
    assert SessionFile.objects.get(pk=upload.pk).deleted_at is not None
    assert FileAudit.objects.filter(file_id=upload.pk, action="purge").exists()
    assert default_storage.exists(loose.storage_name)  # not the session's: untouched


def test_the_size_limit_and_the_quota_are_refused_with_413_naming_the_limit(alice, bob, settings):
    settings.APTIX_UPLOAD_MAX_BYTES = 100
    with pytest.raises(FileRefused) as refused:
        file_upload(owner=alice, uploaded=uploaded("big.csv", csv_plain() * 10))
    assert refused.value.status == 413 and "100 bytes" in refused.value.message
    settings.APTIX_UPLOAD_MAX_BYTES = 1 << 20
    settings.APTIX_UPLOAD_USER_QUOTA = len(csv_plain()) * 2 + 10
    file_upload(owner=alice, uploaded=uploaded("one.csv", csv_plain()))
    kept = file_upload(owner=alice, uploaded=uploaded("two.csv", csv_plain()))
    with pytest.raises(FileRefused) as over:
        file_upload(owner=alice, uploaded=uploaded("three.csv", csv_plain()))
    assert over.value.status == 413 and "quota" in over.value.message
    assert file_upload(owner=bob, uploaded=uploaded("bobs.csv", csv_plain()))  # a quota is per user
    file_delete(alice, kept.pk)  # deleted files do not count
    assert file_upload(owner=alice, uploaded=uploaded("three.csv", csv_plain()))


def test_a_refused_upload_leaves_nothing_stored(alice, media):
    with pytest.raises(FileRefused):
        file_upload(owner=alice, uploaded=uploaded("x.csv", b"\x7fELF" + b"\x00" * 64))
    assert not SessionFile.objects.exists() and not FileAudit.objects.exists()
    assert not any(path.is_file() for path in media.rglob("*")) if media.exists() else True
