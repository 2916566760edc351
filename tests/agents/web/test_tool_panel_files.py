"""The Tools panel agrees with the turn about the files tools: allowed by the mode's policy, they
say "offered once the session has files" until a file is attached, then they are offered."""

from __future__ import annotations

import pytest
from asgiref.sync import async_to_sync

from agents.web.toolpanel import tool_panel
from files.services import file_upload
from tests.helpers.files import csv_plain, media, uploaded  # noqa: F401 - media: autouse fixture

pytestmark = pytest.mark.django_db
FILES_TOOLS = {"files_list", "files_query", "files_read"}


def files_rows(session) -> dict[str, str]:
    return {row.name: row.blocked for row in tool_panel(session)["internal"] if row.name in FILES_TOOLS}


def test_the_files_tools_wait_for_a_file(make_session, alice):
    session = async_to_sync(make_session)(mode="data-analysis")
    assert files_rows(session) == dict.fromkeys(FILES_TOOLS, "offered once the session has files")
    file_upload(owner=alice, uploaded=uploaded("sales.csv", csv_plain()), session=session)
    assert files_rows(session) == dict.fromkeys(FILES_TOOLS, "")
