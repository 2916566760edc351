"""G3: malformed office files are refused with 422 naming what is wrong, never a 500, and leave
nothing stored. A DOCX with bad XML, entity amplification, a CRC that fails or a size that lies
(zipfile.BadZipFile and lxml's XMLSyntaxError passed the documents reader's except), and an XLSX
with bad sheet XML, a sheet the workbook names but lacks, a cell reference "A-1" or a size that lies
(calamine raised outside the tables reader's try): 8 of 31 such files answered 500."""

from __future__ import annotations

import pytest
from django.test import Client

from aptix.tokens import api_token_create
from files.errors import FileRefused
from files.models import FileAudit, SessionFile
from files.services import file_upload
from tests.helpers.crafted_files import (
    billion_laughs,
    crc_mismatch,
    lying_size,
    sheet_xml,
    with_member,
    xlsx_with_sheet,
)
from tests.helpers.files import docx_bytes, uploaded

pytestmark = pytest.mark.django_db

DOCUMENT = "word/document.xml"
SHEET = "xl/worksheets/sheet1.xml"
TRUNCATED = b'<w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body><w:p>'


def good_sheet() -> bytes:
    return xlsx_with_sheet(sheet_xml([("A1", "region"), ("A2", "North")]))


MALFORMED = {
    "docx-bad-xml": ("bad.docx", lambda: with_member(docx_bytes(), DOCUMENT, TRUNCATED), "Premature end of data"),
    "docx-entity-expansion": ("lol.docx", lambda: with_member(docx_bytes(), DOCUMENT, billion_laughs()), "entity"),
    "docx-crc-mismatch": ("crc.docx", lambda: crc_mismatch(docx_bytes(), DOCUMENT, b"Workers read"), "CRC"),
    "docx-lying-size": ("lying.docx", lambda: lying_size(docx_bytes(), DOCUMENT), "CRC"),
    "xlsx-bad-sheet-xml": (
        "bad.xlsx",
        lambda: xlsx_with_sheet("<worksheet><sheetData><row><c r='A1'"),
        "sheet1.xml is not well-formed XML",
    ),
    "xlsx-missing-sheet": (
        "missing.xlsx",
        lambda: xlsx_with_sheet(sheet_xml([("A1", "a")]), target="worksheets/nope.xml"),
        "sheet “Sheet1” is named in the workbook but its part is missing",
    ),
    "xlsx-negative-reference": (
        "negative.xlsx",
        lambda: xlsx_with_sheet(sheet_xml([("A1", "a"), ("A-1", "b")])),
        "sheet “Sheet1” has a cell reference “A-1” that is no cell",
    ),
    "xlsx-crc-mismatch": ("crc.xlsx", lambda: crc_mismatch(good_sheet(), SHEET, b"North"), "CRC"),
    "xlsx-lying-size": ("lying.xlsx", lambda: lying_size(good_sheet(), SHEET), "CRC"),
    "xlsx-entity-expansion": ("lol.xlsx", lambda: with_member(good_sheet(), SHEET, billion_laughs()), "DTD"),
}


@pytest.mark.parametrize("case", MALFORMED, ids=list(MALFORMED))
def test_a_malformed_office_file_is_a_422_naming_the_problem_with_nothing_stored(alice, media, case):
    name, make, named = MALFORMED[case]
    with pytest.raises(FileRefused) as refused:
        file_upload(owner=alice, uploaded=uploaded(name, make()))
    assert refused.value.status == 422, refused.value.message
    assert named in refused.value.message
    assert refused.value.message.startswith(("The document could not be read: ", "The workbook "))
    assert not SessionFile.objects.exists() and not FileAudit.objects.exists()
    assert not [p for p in media.rglob("*") if p.is_file()] if media.exists() else True


@pytest.mark.parametrize("case", ["docx-crc-mismatch", "xlsx-negative-reference"])
def test_the_upload_view_and_the_api_answer_422_json(alice, case):
    name, make, named = MALFORMED[case]
    client = Client()
    client.force_login(alice)
    page = client.post("/files/", {"file": uploaded(name, make())})
    assert page.status_code == 422 and named in page.json()["error"]["message"]
    token = api_token_create(user=alice, name="ci")[1]
    api = Client().post("/api/v1/files", {"file": uploaded(name, make())}, headers={"Authorization": f"Bearer {token}"})
    assert api.status_code == 422 and named in api.json()["error"]["message"]
    assert not SessionFile.objects.exists()
