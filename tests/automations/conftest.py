"""Fixtures of the automations tests: the scripted model and sessions (tests/helpers/reasoner.py), a
stand-in MCP tool that writes (so a call waits for approval unless pre-approved), automations."""

from __future__ import annotations

from typing import ClassVar

import pytest
from asgiref.sync import sync_to_async

from automations.services import automation_create
from tests.helpers.reasoner import llm, make_session, model, run_turn  # noqa: F401 - fixtures
from tools.base import InvokeResult, function_schema
from tools.registry import mcp_registry


class WritingTool:
    """A stand-in for an MCP server's writing tool (not read-only: a call asks first)."""

    TOOL_USAGE_METADATA = "Add a note."
    is_tool_fully_executed_on_server = True
    TOOL_NAME = "notes__add_note"
    read_only = False
    calls: ClassVar[list] = []

    @staticmethod
    def get_schema():
        return function_schema("notes__add_note", "Add a note.", {"text": {"type": "string"}}, required=["text"])

    async def execute(self, arguments_json, context):
        type(self).calls.append(arguments_json)
        return InvokeResult.create("Noted.")


@pytest.fixture
def notes_tool():
    WritingTool.calls = []
    tool = WritingTool()
    mcp_registry.register(tool)
    yield tool
    mcp_registry.unregister("notes__add_note")


@pytest.fixture
def make_automation(team_a, alice):
    async def make(user=None, team=None, **data):
        data.setdefault("name", "Weekly summary")
        data.setdefault("prompt", "Summarise the week of {date}")
        automation, secret = await sync_to_async(automation_create)(user=user or alice, team=team or team_a, data=data)
        automation.secret = secret
        return automation

    return make
