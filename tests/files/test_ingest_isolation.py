"""G1: an upload is read in a child process within a memory and a time limit, so no file can take the
serving process down. A 1.5 KB XLSX with cells A1 and XFD1048576 made calamine allocate the whole
1,048,576 × 16,384 range in the web process, and Rust aborted it (SIGABRT) with every stream on it;
now the sheet's size is read from its XML first and refused naming it, and a child that runs out of
memory or time is a 422 naming the limit, with nothing stored."""

from __future__ import annotations

import os

import pytest

from files.errors import FileRefused
from files.models import FileAudit, SessionFile
from files.services import file_upload
from tests.helpers.crafted_files import sheet_xml, xlsx_huge_range, xlsx_with_sheet
from tests.helpers.files import csv_plain, uploaded

pytestmark = pytest.mark.django_db


def nothing_stored(media) -> bool:
    files = [p for p in media.rglob("*") if p.is_file()] if media.exists() else []
    return not SessionFile.objects.exists() and not FileAudit.objects.exists() and not files


def test_a_sheet_spanning_the_whole_grid_is_refused_naming_its_size_and_the_process_lives(alice, media):
    data = xlsx_huge_range()
    assert len(data) < 2000
    pid = os.getpid()
    with pytest.raises(FileRefused) as refused:
        file_upload(owner=alice, uploaded=uploaded("grid.xlsx", data))
    assert os.getpid() == pid  # this process read the answer: it was not aborted
    assert refused.value.status == 422
    assert "Sheet “Sheet1” spans 1,048,576 rows × 16,384 columns (A1:XFD1048576)" in refused.value.message
    assert nothing_stored(media)


def test_a_declared_dimension_is_checked_before_the_cells(alice, media, settings):
    settings.APTIX_FILES_MAX_COLUMNS = 100
    data = xlsx_with_sheet(sheet_xml([("A1", "a"), ("B2", "b")], dimension="A1:ZZ5"))
    with pytest.raises(FileRefused) as refused:
        file_upload(owner=alice, uploaded=uploaded("declared.xlsx", data))
    assert refused.value.status == 422
    assert "spans 5 rows × 702 columns (A1:ZZ5); at most 100 columns are accepted" in refused.value.message
    assert nothing_stored(media)


def test_a_reader_past_its_memory_limit_is_a_422_naming_it(alice, media, settings):
    settings.APTIX_FILES_INGEST_CHILD_MEMORY_MB = 64  # too little to map DuckDB into: the child fails
    with pytest.raises(FileRefused) as refused:
        file_upload(owner=alice, uploaded=uploaded("sales.csv", csv_plain()))
    assert refused.value.status == 422
    assert refused.value.message == "The file could not be read: reading it needed more than 64 MB of memory."
    assert nothing_stored(media)


def test_a_reader_past_its_time_limit_is_a_422_naming_it(alice, media, settings):
    settings.APTIX_FILES_INGEST_TIMEOUT = 0.05  # less than the child takes to start: it is killed
    with pytest.raises(FileRefused) as refused:
        file_upload(owner=alice, uploaded=uploaded("sales.csv", csv_plain()))
    assert refused.value.status == 422
    assert refused.value.message == "The file could not be read: reading it took more than 0.05 s."
    assert nothing_stored(media)


def test_the_child_gets_none_of_the_servers_environment(monkeypatch):
    from files.ingest.isolation import _environment

    monkeypatch.setenv("SECRET_KEY", "do-not-pass")
    assert "SECRET_KEY" not in _environment() and "DATABASE_URL" not in _environment()
