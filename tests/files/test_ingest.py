"""Each kind, uploaded as real files the tests make, decided by its content: tables (CSV with a BOM
and semicolons, XLSX of two sheets, Parquet, JSONL), documents (PDF, DOCX, Markdown, HTML) and an
image; a renamed executable, a mismatched name and a zip bomb are refused."""

from __future__ import annotations

import sys

import pytest

from files.errors import FileRefused
from files.models import SessionFile
from files.search import best_passages, document_pages
from files.services import file_describe, file_thumbnail_open, file_upload
from tests.helpers.files import (
    csv_semicolon_bom,
    docx_bytes,
    executable_bytes,
    jsonl_bytes,
    parquet_bytes,
    pdf_bytes,
    png_bytes,
    uploaded,
    xlsx_two_sheets,
    zip_bomb_docx,
    zip_bomb_xlsx,
)

pytestmark = pytest.mark.django_db


def columns(table: dict) -> list[tuple[str, str]]:
    return [(c["name"], c["type"]) for c in table["columns"]]


def test_csv_with_a_bom_semicolons_and_decimal_commas(alice):
    upload = file_upload(owner=alice, uploaded=uploaded("Umsatz Q3.csv", csv_semicolon_bom()))
    [table] = file_describe(upload)["tables"]
    assert upload.format == "csv" and table["name"] == "umsatz_q3" and table["rows"] == 6
    assert columns(table) == [("region", "VARCHAR"), ("quarter", "VARCHAR"), ("sales", "DOUBLE")]
    assert upload.preview["columns"] == ["region", "quarter", "sales"]
    assert upload.preview["rows"][0] == ["North", "Q1", "100.5"]


def test_a_latin_1_csv_is_read_in_its_encoding(alice):
    data = "ville,ventes\nMontréal,10\nQuébec,20\nZürich,30\n".encode("latin-1")
    upload = file_upload(owner=alice, uploaded=uploaded("ventes.csv", data))
    assert [row[0] for row in upload.preview["rows"]] == ["Montréal", "Québec", "Zürich"]


def test_an_xlsx_sheet_each_becomes_a_table(alice):
    upload = file_upload(owner=alice, uploaded=uploaded("plan.xlsx", xlsx_two_sheets()))
    tables = file_describe(upload)["tables"]
    assert [(t["name"], t["rows"]) for t in tables] == [("plan_sales", 6), ("plan_targets", 2)]
    assert columns(tables[1]) == [("region", "VARCHAR"), ("target", "BIGINT")]


def test_parquet_and_jsonl(alice, tmp_path):
    parquet = file_upload(owner=alice, uploaded=uploaded("amounts.parquet", parquet_bytes(tmp_path)))
    assert file_describe(parquet)["tables"][0]["rows"] == 40 and parquet.format == "parquet"
    jsonl = file_upload(owner=alice, uploaded=uploaded("sales.jsonl", jsonl_bytes()))
    assert jsonl.format == "jsonl" and columns(file_describe(jsonl)["tables"][0])[0] == ("region", "VARCHAR")


def test_a_pdf_is_read_by_page_and_searchable(alice):
    data = pdf_bytes(["Introduction\nThe budget is tight.", "Storage\nUploads go to object storage.", "End"])
    upload = file_upload(owner=alice, uploaded=uploaded("memo.pdf", data))
    assert upload.kind == "document" and upload.pages == 3 and file_describe(upload)["pages"] == 3
    pages = document_pages(upload.data_name)
    assert "Uploads go to object storage." in pages[1]["text"]
    assert best_passages(upload.data_name, "object storage")[0].page == 2


def test_a_pdf_is_read_by_pypdf_where_pdfium_is_missing(monkeypatch, tmp_path):
    """Read in this process: an upload is read in a child process (files/ingest/isolation.py), which a
    module hidden here would not reach."""
    from files.ingest.documents import pdf_pages

    pdf = tmp_path / "memo.pdf"
    pdf.write_bytes(pdf_bytes(["First page", "Second page"]))
    monkeypatch.setitem(sys.modules, "pypdfium2", None)  # `import pypdfium2` raises ImportError: pypdf reads
    assert [p["text"] for p in pdf_pages(str(pdf))] == ["First page", "Second page"]


def test_a_docx_is_read_by_section(alice):
    upload = file_upload(owner=alice, uploaded=uploaded("decision.docx", docx_bytes()))
    pages = document_pages(upload.data_name)
    assert upload.format == "docx" and [p["title"] for p in pages] == ["Decision", "Consequences"]
    assert "Workers read" in pages[1]["text"]


def test_markdown_html_and_text_are_read_by_section(alice):
    markdown = file_upload(owner=alice, uploaded=uploaded("notes.md", b"# One\nfirst\n\n## Two\nsecond\n"))
    assert [p["title"] for p in document_pages(markdown.data_name)] == ["One", "Two"]
    html = b"<!doctype html><html><body><h1>A</h1><p>alpha</p><script>x()</script><h2>B</h2><p>beta</p></body></html>"
    page = file_upload(owner=alice, uploaded=uploaded("page.html", html))
    assert [(p["title"], p["text"]) for p in document_pages(page.data_name)] == [("A", "alpha"), ("B", "beta")]
    text = file_upload(owner=alice, uploaded=uploaded("readme", b"Just words.\n\nMore words.\n"))
    assert text.format == "text" and text.pages == 1


def test_an_image_gets_a_thumbnail(alice):
    upload = file_upload(owner=alice, uploaded=uploaded("chart.png", png_bytes((600, 300))))
    assert upload.kind == "image" and upload.preview == {"width": 600, "height": 300, "thumbnail": True}
    with file_thumbnail_open(upload) as handle:
        assert handle.read(8) == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize("name", ["report.csv", "photo.png", "run.exe", "data"])
def test_a_renamed_executable_is_refused_with_415(alice, name):
    with pytest.raises(FileRefused) as refused:
        file_upload(owner=alice, uploaded=uploaded(name, executable_bytes()))
    assert refused.value.status == 415
    assert "application/x-executable" in refused.value.message or "executable" in refused.value.message
    assert "Aptix accepts tables (CSV" in refused.value.message


def test_a_name_that_says_another_kind_is_refused(alice):
    with pytest.raises(FileRefused) as refused:
        file_upload(owner=alice, uploaded=uploaded("sales.csv", png_bytes()))
    assert refused.value.status == 415 and "named as .csv but its content is a PNG image" in refused.value.message


def test_a_zip_bomb_xlsx_is_refused_within_its_limit(alice, settings):
    settings.APTIX_FILES_MAX_UNZIPPED = 8 << 20
    bomb = zip_bomb_xlsx(64 << 20)
    assert len(bomb) < 200_000  # small on the wire
    with pytest.raises(FileRefused) as refused:
        file_upload(owner=alice, uploaded=uploaded("bomb.xlsx", bomb))
    assert refused.value.status == 413 and "64 MB" in refused.value.message and "8 MB" in refused.value.message


def test_a_zip_bomb_docx_is_refused_within_its_limit(alice, settings):
    """A DOCX is a zip archive too: its decompressed size is checked before python-docx opens it."""
    settings.APTIX_FILES_MAX_UNZIPPED = 8 << 20
    bomb = zip_bomb_docx(64 << 20)
    assert len(bomb) < 200_000
    with pytest.raises(FileRefused) as refused:
        file_upload(owner=alice, uploaded=uploaded("bomb.docx", bomb))
    assert refused.value.status == 413 and "64 MB" in refused.value.message and "8 MB" in refused.value.message
    assert not SessionFile.objects.filter(name="bomb.docx").exists()  # nothing half-written


def test_absurd_shapes_are_refused_with_422(alice, settings):
    settings.APTIX_FILES_MAX_COLUMNS = 5
    wide = (",".join(f"c{i}" for i in range(6)) + "\n" + ",".join("1" * 6) + "\n").encode()
    with pytest.raises(FileRefused) as refused:
        file_upload(owner=alice, uploaded=uploaded("wide.csv", wide))
    assert refused.value.status == 422 and "6 columns" in refused.value.message
    settings.APTIX_FILES_MAX_COLUMNS = 100
    settings.APTIX_FILES_MAX_ROWS = 3
    with pytest.raises(FileRefused) as long:
        file_upload(owner=alice, uploaded=uploaded("long.csv", b"a,b\n" + b"1,2\n" * 5))
    assert long.value.status == 422 and "5 rows" in long.value.message


def test_unreadable_content_is_refused_with_422(alice):
    with pytest.raises(FileRefused) as refused:
        file_upload(owner=alice, uploaded=uploaded("broken.pdf", b"%PDF-1.4\nnot really a pdf"))
    assert refused.value.status == 422


@pytest.mark.parametrize(
    ("name", "data"),
    [("broken.parquet", b"PAR1garbagePAR1"), ("broken.jsonl", b'{"a":1}\n{bad\n')],
)
def test_an_unreadable_files_error_names_no_path_on_the_server(alice, name, data):
    """DuckDB names the file it failed on: the upload's temporary file, a path of the server's."""
    with pytest.raises(FileRefused) as refused:
        file_upload(owner=alice, uploaded=uploaded(name, data))
    assert refused.value.status == 422 and refused.value.message.startswith("The table could not be read")
    assert "/tmp" not in refused.value.message and "aptix-upload" not in refused.value.message
    assert "the file" in refused.value.message


def test_a_path_in_an_error_becomes_the_file_and_a_url_stays():
    from files.ingest.tables import first_line

    assert first_line(ValueError("Footer error in '/var/tmp/x/upload'\nmore")) == "Footer error in 'the file'"
    assert first_line(ValueError("see https://duckdb.org/docs/a/b, 1/2")) == "see https://duckdb.org/docs/a/b, 1/2"


def test_a_semicolon_csv_with_decimal_points_has_its_numbers_typed_as_numbers(alice):
    """Many tools write `;` with `.` decimals: `amount` was VARCHAR, and SUM(amount) a binder error."""
    data = b"region;amount;share\nNorth;100.5;0.25\nSouth;200.75;0.5\nEast;12.0;0.25\n"
    upload = file_upload(owner=alice, uploaded=uploaded("export.csv", data))
    [table] = file_describe(upload)["tables"]
    assert columns(table) == [("region", "VARCHAR"), ("amount", "DOUBLE"), ("share", "DOUBLE")]
    assert table["decimal"] == "numbers read with a decimal point (1.5 is one and a half)"
    assert upload.preview["rows"][1] == ["South", "200.75", "0.5"]


def test_a_semicolon_csv_with_decimal_commas_says_so(alice):
    upload = file_upload(owner=alice, uploaded=uploaded("Umsatz.csv", csv_semicolon_bom()))
    [table] = file_describe(upload)["tables"]
    assert columns(table)[2] == ("sales", "DOUBLE")
    assert table["decimal"] == "numbers read with a decimal comma (1,5 is one and a half)"


def test_a_mixed_semicolon_csv_keeps_text_as_text_and_points_as_decimals(alice):
    data = b"id;price;note\n1;3.75;red, large\n2;10.5;blue, small\n3;0.99;green\n"
    upload = file_upload(owner=alice, uploaded=uploaded("mixed.csv", data))
    [table] = file_describe(upload)["tables"]
    assert columns(table) == [("id", "BIGINT"), ("price", "DOUBLE"), ("note", "VARCHAR")]
    assert upload.preview["rows"][0] == ["1", "3.75", "red, large"]


def test_a_comma_csv_says_nothing_of_its_decimals(alice):
    upload = file_upload(owner=alice, uploaded=uploaded("plain.csv", b"a,b\n1.5,x\n2.5,y\n"))
    assert "decimal" not in file_describe(upload)["tables"][0]
