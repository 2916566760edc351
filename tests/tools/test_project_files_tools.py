"""The files tools in a session of a project: files_list lists the session's own files and then its
project's (marked), files_query queries the project's tables beside the session's own, files_read reads
the project's documents; a user who is not a member of the project gets none of it; a query naming a
deleted project file's table says the file is gone."""

from __future__ import annotations

import json

import pytest
from asgiref.sync import async_to_sync

from agents.sessions import session_set_project
from files.services import file_upload, session_has_files
from projects.files import project_file_delete, project_file_upload
from projects.services import project_create, project_update
from tests.helpers.files import csv_plain, media, pdf_bytes, uploaded  # noqa: F401 - media: autouse fixture
from tools.base import ToolContext
from tools.builtin.files_list import FilesListTool
from tools.builtin.files_query import FilesQueryTool
from tools.builtin.files_read import FilesReadTool
from tools.tables import parse_markdown_table

pytestmark = pytest.mark.django_db
TOTAL = "SELECT sum(sales) AS total FROM {table}"


@pytest.fixture
def project(team_a, alice):
    project = project_create(team=team_a, user=alice, name="Sales")
    project_file_upload(user=alice, project=project, uploaded=uploaded("sales.csv", csv_plain()))
    pages = ["Travel\nThe travel budget is 4000 euros.", "Storage\nUploads live in object storage."]
    project_file_upload(user=alice, project=project, uploaded=uploaded("policy.pdf", pdf_bytes(pages)))
    return project


def call(tool, args, session, user):
    return async_to_sync(tool.execute)(json.dumps(args), ToolContext(session_id=session.pk, org=None, user=user))


def listed(session, user):
    result = call(FilesListTool(), {}, session, user)
    return json.loads(result.result)["files"] if result.successful else result.error_message


def test_a_new_session_of_the_project_sees_its_files(project, make_session, bob):
    session = async_to_sync(make_session)(user=bob, project=project)
    assert session_has_files(session.pk)
    files = listed(session, bob)
    assert [(f["name"], f.get("project")) for f in files] == [("sales.csv", True), ("policy.pdf", True)]
    assert files[0]["tables"][0]["name"] == "sales"
    total = call(FilesQueryTool(), {"sql": TOTAL.format(table="sales")}, session, bob)
    assert total.result == "| total |\n|---|\n| 830.5 |\n\n1 row"
    read = call(FilesReadTool(), {"file": "policy.pdf", "query": "travel budget"}, session, bob)
    assert "4000 euros" in read.result


def test_the_sessions_own_files_come_first_and_both_are_queried(project, make_session, alice):
    session = async_to_sync(make_session)(project=project)
    own = file_upload(owner=alice, uploaded=uploaded("sales.csv", csv_plain([("West", "Q1", 1.0)])), session=session)
    assert own.tables[0]["name"] == "sales_2"  # the project's "sales" keeps its name in every session
    files = listed(session, alice)
    assert [(f["name"], f.get("project")) for f in files] == [
        ("sales.csv", None),
        ("sales.csv", True),
        ("policy.pdf", True),
    ]
    both = "SELECT (SELECT sum(sales) FROM sales) AS project, (SELECT sum(sales) FROM sales_2) AS own"
    assert parse_markdown_table(call(FilesQueryTool(), {"sql": both}, session, alice).result)[1] == [["830.5", "1.0"]]


def test_a_session_moved_in_keeps_its_own_names_and_sees_the_projects_under_a_suffix(project, make_session, alice):
    session = async_to_sync(make_session)()
    file_upload(owner=alice, uploaded=uploaded("sales.csv", csv_plain([("West", "Q1", 1.0)])), session=session)
    session_set_project(session=session, user=alice, project=project)
    files = listed(session, alice)
    assert [t["name"] for f in files for t in f.get("tables", [])] == ["sales", "sales_2"]
    own = call(FilesQueryTool(), {"sql": TOTAL.format(table="sales")}, session, alice)
    shared = call(FilesQueryTool(), {"sql": TOTAL.format(table="sales_2")}, session, alice)
    assert own.result.startswith("| total |\n|---|\n| 1.0 |")
    assert shared.result.startswith("| total |\n|---|\n| 830.5 |")


def test_someone_no_longer_a_member_sees_none_of_the_projects_files(project, make_session, alice, bob):
    session = async_to_sync(make_session)(user=bob, project=project)
    project_update(project=project, user=alice, members=["alice"])  # bob is out
    assert "no files" in listed(session, bob)
    refused = call(FilesQueryTool(), {"sql": TOTAL.format(table="sales")}, session, bob)
    assert not refused.successful and "830.5" not in str(refused.result)
    read = call(FilesReadTool(), {"file": "policy.pdf"}, session, bob)
    assert not read.successful and "4000" not in str(read.result)


def test_other_users_sessions_and_other_teams_see_nothing(project, make_session, alice, bob, carol, team_b):
    outside = async_to_sync(make_session)(user=bob)  # bob's session outside the project
    assert not session_has_files(outside.pk) and "no files" in listed(outside, bob)
    carols = async_to_sync(make_session)(team=team_b, user=carol)
    assert "no files" in listed(carols, carol)
    inside = async_to_sync(make_session)(project=project)  # alice's session, reached with carol's identity
    assert "no files" in listed(inside, carol)
    policy_id = project.files.get(name="policy.pdf").pk
    crafted = call(FilesReadTool(), {"file": policy_id}, carols, carol)
    assert not crafted.successful and "4000" not in str(crafted.result)


def test_a_query_over_a_deleted_project_table_names_the_file(project, make_session, alice):
    session = async_to_sync(make_session)(project=project)
    sales = project.files.get(name="sales.csv")
    project_file_delete(user=alice, project=project, file_id=sales.pk)
    assert [f["name"] for f in listed(session, alice)] == ["policy.pdf"]
    gone = call(FilesQueryTool(), {"sql": TOTAL.format(table="sales")}, session, alice)
    assert not gone.successful
    assert "The table sales was in “sales.csv”, a file of the session's project that was deleted" in gone.error_message
    typo = call(FilesQueryTool(), {"sql": TOTAL.format(table="nowhere")}, session, alice)
    assert typo.error_message == "None of this session's files is a table. Read documents with files_read."
