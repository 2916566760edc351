"""An empty file is refused with the reason (a 0-byte CSV became a table with one
column called `column0`), and a table with its header but no rows is accepted as what it is: 0 rows."""

from __future__ import annotations

import pytest

from files.errors import FileRefused
from files.models import SessionFile
from files.services import file_describe, file_upload
from files.sniff import HEAD_BYTES
from tests.helpers.files import uploaded

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    ("name", "content"),
    [
        ("sales.csv", b""),
        ("notes.txt", b""),
        ("sales.csv", b"\n\n  \r\n"),  # blank lines only
        ("sales.csv", b"\xef\xbb\xbf\n"),  # a byte-order mark and nothing else
        ("data.json", b"   "),
    ],
)
def test_an_empty_file_is_refused_with_the_reason_and_nothing_stored(alice, media, name, content):
    with pytest.raises(FileRefused) as refused:
        file_upload(owner=alice, uploaded=uploaded(name, content))
    assert refused.value.status == 422
    assert refused.value.message == f"“{name}” is empty: there is nothing in it to read. Attach the file it should be."
    assert not SessionFile.objects.exists()
    assert not media.exists() or not [p for p in media.rglob("*") if p.is_file()]


def test_a_file_of_blank_lines_longer_than_the_head_is_read_not_refused_by_its_start(alice, media):
    """Only what was read whole is called empty: blank lines past the sniffed head, then data."""
    content = b"\n" * (HEAD_BYTES + 10) + b"region,revenue\nNorth,10\n"
    stored = file_upload(owner=alice, uploaded=uploaded("late.csv", content))
    assert stored.kind == "table"


def test_a_header_only_table_is_accepted_with_zero_rows(alice, media):
    stored = file_upload(owner=alice, uploaded=uploaded("empty.csv", b"region,revenue\n"))
    [table] = file_describe(stored)["tables"]
    assert table["rows"] == 0
    assert [c["name"] for c in table["columns"]] == ["region", "revenue"]  # its header, not a `column0`
