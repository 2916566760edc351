"""agent_list_modes against TUL-010 (§3 contract, §4 semantics, §6 required tests)."""

from __future__ import annotations

import json

import pytest

from modes.catalog import AgentModeSummary
from tests.helpers import inline_db
from tools.builtin.list_modes import ERROR_CATALOG_UNAVAILABLE, AgentListModesTool
from tools.registry import ToolRegistry

GENERAL = AgentModeSummary(
    id="0" * 31 + "1",
    key="general",
    display_name="General",
    description="Everyday help.",
    system_prompt_summary="Broad assistant.",
    is_default=True,
    human_role_hints=["Team member"],
    example_utterances=["Summarise this thread"],
)
DATA = AgentModeSummary(
    id="0" * 31 + "2",
    key="data-analysis",
    display_name="Data Analysis",
    description="Questions over data.",
    system_prompt_summary="",
    is_default=False,
    human_role_hints=[],
    example_utterances=["Chart revenue by month", "Top customers by orders"],
)


class FakeCatalog:
    def __init__(self, modes=None, error: Exception | None = None):
        self.modes = modes
        self.error = error
        self.calls = 0

    async def get_all_modes(self):
        self.calls += 1
        if self.error:
            raise self.error
        return self.modes


def test_registers_in_a_registry_with_a_logger(recording_logger):
    registry = ToolRegistry(logger=recording_logger)
    registry.register(AgentListModesTool)
    assert "agent_list_modes" in registry
    assert recording_logger.errors == []


def test_schema_shape():
    schema = AgentListModesTool.get_schema()
    assert schema["type"] == "function"
    function = schema["function"]
    assert function["name"] == AgentListModesTool.TOOL_NAME == "agent_list_modes"
    params = function["parameters"]
    assert params["type"] == "object"
    assert params["properties"]["includeExamples"]["type"] == "boolean"
    assert params["properties"]["includeExamples"]["description"]
    assert params.get("required", []) == []


def test_usage_metadata_carries_the_guidance():
    usage = AgentListModesTool.TOOL_USAGE_METADATA
    for phrase in [
        "what modes are available",
        "choosing between modes",
        "propose a mode change",
        "Do not call it on every user message",
        "substitute for agent_change_mode",
    ]:
        assert phrase in usage


@pytest.mark.parametrize("arguments_json", [None, "", "{}", "null"])
async def test_happy_path_returns_every_field(recording_logger, arguments_json):
    tool = AgentListModesTool(FakeCatalog([GENERAL, DATA]), recording_logger)
    result = await tool.execute(arguments_json, None)
    assert result.successful is True
    payload = json.loads(result.result)
    assert list(payload) == ["modes"]
    first = payload["modes"][0]
    assert first == {
        "id": GENERAL.id,
        "key": "general",
        "displayName": "General",
        "description": "Everyday help.",
        "systemPromptSummary": "Broad assistant.",
        "isDefault": True,
        "humanRoleHints": ["Team member"],
        "exampleUtterances": None,
    }
    assert [m["key"] for m in payload["modes"]] == ["general", "data-analysis"]
    assert payload["modes"][1]["isDefault"] is False


async def test_include_examples(recording_logger):
    tool = AgentListModesTool(FakeCatalog([GENERAL, DATA]), recording_logger)
    payload = json.loads((await tool.execute('{"includeExamples": true}', None)).result)
    assert payload["modes"][1]["exampleUtterances"] == ["Chart revenue by month", "Top customers by orders"]
    assert payload["modes"][0]["exampleUtterances"] == ["Summarise this thread"]
    without = json.loads((await tool.execute('{"includeExamples": false}', None)).result)
    assert all(m["exampleUtterances"] is None for m in without["modes"])


async def test_idempotent(recording_logger):
    tool = AgentListModesTool(FakeCatalog([GENERAL, DATA]), recording_logger)
    first = await tool.execute("{}", None)
    second = await tool.execute("{}", None)
    assert json.loads(first.result) == json.loads(second.result)


async def test_catalog_exception_is_logged_and_unsuccessful(recording_logger):
    tool = AgentListModesTool(FakeCatalog(error=RuntimeError("db down")), recording_logger)
    result = await tool.execute("{}", None)
    assert result.successful is False
    assert result.error_message == ERROR_CATALOG_UNAVAILABLE
    assert result.result is None  # no malformed payload
    assert len(recording_logger.exceptions) == 1
    assert isinstance(recording_logger.exceptions[0][0], RuntimeError)


async def test_catalog_none_is_logged_and_unsuccessful(recording_logger):
    tool = AgentListModesTool(FakeCatalog(modes=None), recording_logger)
    result = await tool.execute(None, None)
    assert result.successful is False and result.error_message and result.result is None
    assert len(recording_logger.errors) == 1


@pytest.mark.parametrize("arguments_json", ["{oops", "[true]", '{"includeExamples": "yes"}'])
async def test_bad_arguments_are_clean_errors(recording_logger, arguments_json):
    catalog = FakeCatalog([GENERAL])
    result = await AgentListModesTool(catalog, recording_logger).execute(arguments_json, None)
    assert result.successful is False and result.error_message
    assert catalog.calls == 0


def test_dependencies_are_required(recording_logger):
    with pytest.raises(ValueError):
        AgentListModesTool(None, recording_logger)
    with pytest.raises(ValueError):
        AgentListModesTool(FakeCatalog([]), None)


@inline_db
async def test_against_the_real_catalog_is_read_only(recording_logger):
    from modes.catalog import catalog_service
    from modes.models import AgentMode

    before = [(m.key, m.updated_at) async for m in AgentMode.objects.order_by("key")]
    result = await AgentListModesTool(catalog_service, recording_logger).execute('{"includeExamples": true}', None)
    payload = json.loads(result.result)
    keys = [m["key"] for m in payload["modes"]]
    assert keys[:1] == ["general"] and {"ddr-authoring", "workflow-authoring", "data-analysis"} <= set(keys)
    assert all(m["exampleUtterances"] for m in payload["modes"])
    after = [(m.key, m.updated_at) async for m in AgentMode.objects.order_by("key")]
    assert before == after
