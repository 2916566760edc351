"""The Tools panel agrees with the turn about the files tools: allowed by the mode's policy, they
say "offered once the session has files" until a file is attached, then they are offered."""

from __future__ import annotations

import re

import pytest
from asgiref.sync import async_to_sync
from django.urls import reverse

from agents.sessions import session_create
from agents.web.toolpanel import tool_panel
from files.services import file_upload
from modes.models import AgentMode
from tests.helpers.files import csv_plain, media, uploaded  # noqa: F401 - media: autouse fixture
from tools.base import InvokeResult, function_schema
from tools.registry import mcp_registry

pytestmark = pytest.mark.django_db
FILES_TOOLS = {"files_list", "files_query", "files_read"}


def files_rows(session) -> dict[str, str]:
    return {row.name: row.blocked for row in tool_panel(session)["internal"] if row.name in FILES_TOOLS}


def test_the_files_tools_wait_for_a_file(make_session, alice):
    session = async_to_sync(make_session)(mode="data-analysis")
    assert files_rows(session) == dict.fromkeys(FILES_TOOLS, "offered once the session has files")
    file_upload(owner=alice, uploaded=uploaded("sales.csv", csv_plain()), session=session)
    assert files_rows(session) == dict.fromkeys(FILES_TOOLS, "")


class _NotesTool:
    """A stand-in for a tool of the notes MCP server, registered as the MCP host registers one."""

    TOOL_USAGE_METADATA = "Add a note."
    is_tool_fully_executed_on_server = True
    TOOL_NAME = "notes__add_note"
    read_only = False
    annotations = None

    @staticmethod
    def get_schema():
        return function_schema("notes__add_note", "Add a note.", {"text": {"type": "string"}}, required=["text"])

    async def execute(self, arguments_json, context):
        return InvokeResult.create("added")


@pytest.fixture
def notes_tool():
    mcp_registry.register(_NotesTool())
    yield
    mcp_registry.unregister("notes__add_note")


@pytest.mark.django_db
def test_a_server_whose_tools_the_mode_offers_none_of_says_so(client, team_a, alice, notes_tool):
    """The panel said "ready with 1 tool" and ticked the server while the mode's
    policy greyed all its tools."""
    client.force_login(alice)
    ddr = session_create(team=team_a, user=alice, mode="ddr-authoring", execution="agent")
    html = client.get(reverse("session-detail", args=[ddr.id])).content.decode()
    head = re.search(r'<label class="server-head">(.*?)</label>', html, re.S).group(1)
    assert "not offered in the DDR Authoring mode" in head
    assert re.search(r'<input type="checkbox"[^>]*\bdisabled\b', head) and "checked" not in head
    AgentMode.objects.filter(key="ddr-authoring").update(tool_policy=["notes.*"])  # now it offers them
    html = client.get(reverse("session-detail", args=[ddr.id])).content.decode()
    head = re.search(r'<label class="server-head">(.*?)</label>', html, re.S).group(1)
    assert "not offered" not in head and "checked" in head
