"""files_list, files_query and files_read: what the model gets about a session's files, the sandbox's
refusals as tool errors, someone else's file id not found, and when the tools are offered."""

from __future__ import annotations

import json

import pytest
from asgiref.sync import async_to_sync
from django.urls import reverse

from agents.run.pipeline import select_tools
from files.services import file_upload
from tests.helpers.files import csv_plain, docx_bytes, media, pdf_bytes, uploaded  # noqa: F401 - media: autouse fixture
from tools.base import ToolContext
from tools.builtin.files_list import FilesListTool
from tools.builtin.files_query import FilesQueryTool, result_text
from tools.builtin.files_read import FilesReadTool
from tools.registry import internal_registry, needs_session_files
from tools.tables import parse_markdown_table

pytestmark = pytest.mark.django_db
FILES_TOOLS = {"files_list", "files_query", "files_read"}


@pytest.fixture
def session(make_session, alice):
    session = async_to_sync(make_session)()
    file_upload(owner=alice, uploaded=uploaded("sales.csv", csv_plain()), session=session)
    pages = ["Budget\nThe travel budget is 4000 euros.", "Storage\nUploads live in object storage.", "Fin"]
    file_upload(owner=alice, uploaded=uploaded("memo.pdf", pdf_bytes(pages)), session=session)
    return session


def context(session, user) -> ToolContext:
    return ToolContext(session_id=session.pk, org=None, user=user)


def call(tool, args, ctx):
    return async_to_sync(tool.execute)(json.dumps(args), ctx)


def test_files_list_gives_tables_columns_rows_and_pages(session, alice):
    result = call(FilesListTool(), {}, context(session, alice))
    files = json.loads(result.result)["files"]
    assert [(f["name"], f["kind"]) for f in files] == [("sales.csv", "table"), ("memo.pdf", "document")]
    assert files[0]["tables"] == [
        {
            "name": "sales",
            "columns": [
                {"name": "region", "type": "VARCHAR"},
                {"name": "quarter", "type": "VARCHAR"},
                {"name": "sales", "type": "DOUBLE"},
            ],
            "rows": 6,
        }
    ]
    assert files[1]["pages"] == 3 and len(files[0]["fileId"]) == 32


def test_files_query_answers_in_the_markdown_table_format_with_the_row_count(session, alice):
    sql = "SELECT region, sum(sales) AS total FROM sales GROUP BY region ORDER BY total DESC"
    result = call(FilesQueryTool(), {"sql": sql}, context(session, alice))
    assert result.successful
    columns, rows = parse_markdown_table(result.result)
    assert columns == ["region", "total"] and rows[0] == ["South", "410.0"]
    assert result.result.endswith("\n\n3 rows")


def test_files_query_refusals_are_tool_errors(session, alice):
    for sql, says in [
        ("SELECT * FROM read_csv('/etc/passwd')", "out of reach"),
        ("DROP VIEW sales", "DROP statement"),
        ("SELECT * FROM nowhere", "nowhere"),
    ]:
        result = call(FilesQueryTool(), {"sql": sql}, context(session, alice))
        assert not result.successful and says in result.error_message
    assert "requires \"sql\"" in call(FilesQueryTool(), {}, context(session, alice)).error_message


def test_a_result_is_capped_by_the_budget_and_says_so():
    from files.sandbox import QueryResult

    result = QueryResult(["n", "text"], [(i, "x" * 50) for i in range(200)], total=5000)
    text = result_text(result, 2000)
    assert len(text) < 2300 and "of 5,000 rows (the result size limit)" in text
    assert parse_markdown_table(text) is not None


def test_files_read_by_page_and_by_query(session, alice):
    page = call(FilesReadTool(), {"file": "memo.pdf", "page": 2}, context(session, alice))
    assert page.result.startswith("“memo.pdf”, page 2 of 3") and "object storage" in page.result
    found = call(FilesReadTool(), {"file": "MEMO.PDF", "query": "travel budget"}, context(session, alice))
    assert "[page 1]" in found.result and "4000 euros" in found.result
    beyond = call(FilesReadTool(), {"file": "memo.pdf", "page": 9}, context(session, alice))
    assert "has 3 pages; there is no page 9" in beyond.result
    table = call(FilesReadTool(), {"file": "sales.csv"}, context(session, alice))
    assert not table.successful and "files_query" in table.error_message


def test_a_docx_is_read_in_sections_not_pages(session, alice, client):
    """A DOCX's parts (its headings) were called pages ("4 pages", "[page 4 — …]")."""
    file_upload(owner=alice, uploaded=uploaded("adr.docx", docx_bytes()), session=session)
    listed = json.loads(call(FilesListTool(), {}, context(session, alice)).result)["files"]
    adr = next(f for f in listed if f["name"] == "adr.docx")
    memo = next(f for f in listed if f["name"] == "memo.pdf")
    assert (adr["pages"], adr["pageUnit"], memo["pageUnit"]) == (2, "section", "page")
    second = call(FilesReadTool(), {"file": "adr.docx", "page": 2}, context(session, alice))
    assert second.result.startswith("“adr.docx”, section 2 of 2 — Consequences")
    found = call(FilesReadTool(), {"file": "adr.docx", "query": "storage API"}, context(session, alice))
    assert "[section 1 — Decision]" in found.result and "[page" not in found.result
    beyond = call(FilesReadTool(), {"file": "adr.docx", "page": 5}, context(session, alice))
    assert "has 2 sections; there is no section 5" in beyond.result
    client.force_login(alice)
    page = client.get(reverse("session-detail", args=[session.id])).content.decode()
    assert "document · " in page and "· 2 sections" in page and "· 3 pages" in page  # the Files panel


def test_someone_elses_file_id_is_not_found_through_the_tools(session, alice, bob, make_session):
    bobs_session = async_to_sync(make_session)(user=bob)
    bobs = file_upload(owner=bob, uploaded=uploaded("secret.pdf", pdf_bytes(["salaries"])), session=bobs_session)
    result = call(FilesReadTool(), {"file": bobs.pk}, context(session, alice))
    assert not result.successful and "No document" in result.error_message and "salaries" not in str(result)
    # Bob's own session reached with Alice's identity (a forged context): her tools see nothing there.
    listed = call(FilesListTool(), {}, context(bobs_session, alice))
    assert not listed.successful and "no files" in listed.error_message
    assert not call(
        FilesQueryTool(), {"sql": "SELECT 1"}, ToolContext(session_id=None, org=None, user=alice)
    ).successful


def test_the_files_tools_are_offered_only_to_a_session_with_files():
    assert {name for name, tool in internal_registry() if needs_session_files(tool)} == FILES_TOOLS
    policy = ["agent_list_modes", "files_list", "files_query", "files_read"]
    for execution in ("ask", "agent"):
        without = select_tools(policy=policy, toggles={}, execution=execution, server_order=[])
        assert FILES_TOOLS.isdisjoint(without.names)
        with_files = select_tools(
            policy=policy, toggles={}, execution=execution, server_order=[], session_has_files=True
        )
        assert set(with_files.names) >= FILES_TOOLS
    not_allowed = select_tools(
        policy=["image_gen"], toggles={}, execution="agent", server_order=[], session_has_files=True
    )
    assert FILES_TOOLS.isdisjoint(not_allowed.names)


@pytest.mark.parametrize("mode", ["general", "data-analysis"])
def test_the_seeded_modes_allow_the_files_tools(mode):
    from modes.models import AgentMode

    assert set(AgentMode.objects.get(key=mode).tool_policy) >= FILES_TOOLS
