"""Registration checks the reflection contract (TUL-010 §3.1) and names what is wrong."""

from __future__ import annotations

import pytest

from tools.base import InvokeResult, function_schema
from tools.builtin.list_modes import AgentListModesTool
from tools.builtin.mode_change import ModeChangeTool
from tools.registry import ToolRegistrationError, ToolRegistry, build_internal_registry, mcp_registry


def make_tool(**overrides):
    attrs = {
        "TOOL_NAME": "hello_world",
        "TOOL_USAGE_METADATA": "Say hello.",
        "is_tool_fully_executed_on_server": True,
        "get_schema": staticmethod(lambda: function_schema("hello_world", "Says hello.", {})),
    }

    async def execute(self, arguments_json, context):
        return InvokeResult.create("hello")

    attrs["execute"] = execute
    attrs.update(overrides)
    return type("HelloTool", (), attrs)


def test_valid_tool_registers():
    registry = ToolRegistry()
    tool = make_tool()
    assert registry.register(tool) is tool
    assert registry.get("hello_world") is tool
    assert registry.names() == ["hello_world"]
    assert registry.schemas()[0]["function"]["name"] == "hello_world"


@pytest.mark.parametrize(
    "overrides, problem",
    [
        ({"TOOL_NAME": "hello world"}, "does not match"),
        ({"TOOL_NAME": "x" * 65}, "does not match"),
        ({"TOOL_NAME": ""}, "TOOL_NAME is missing or empty"),
        ({"TOOL_NAME": None}, "TOOL_NAME is missing or empty"),
        ({"TOOL_USAGE_METADATA": ""}, "TOOL_USAGE_METADATA is missing or empty"),
        ({"TOOL_USAGE_METADATA": "   "}, "TOOL_USAGE_METADATA is missing or empty"),
        ({"is_tool_fully_executed_on_server": "yes"}, "is_tool_fully_executed_on_server"),
        ({"get_schema": staticmethod(lambda: ["not", "a", "dict"])}, "must return a dict"),
        ({"get_schema": staticmethod(lambda: {"type": "tool"})}, '"type"] must be "function"'),
        ({"get_schema": staticmethod(lambda: function_schema("other_name", "d", {}))}, "expected 'hello_world'"),
        ({"get_schema": staticmethod(lambda: function_schema("hello_world", "", {}))}, "description"),
        (
            {
                "get_schema": staticmethod(
                    lambda: {
                        "type": "function",
                        "function": {"name": "hello_world", "description": "d", "parameters": {"type": "array"}},
                    }
                )
            },
            "must be an object schema",
        ),
        (
            {"get_schema": staticmethod(lambda: function_schema("hello_world", "d", {}, required=["who"]))},
            "not declared in properties",
        ),
        ({"get_schema": lambda self: {}}, "@staticmethod"),
        ({"get_schema": staticmethod(lambda x: {})}, "no parameters"),
        ({"execute": lambda self, a, c: None}, "async method"),
    ],
)
def test_bad_tools_fail_with_a_message_naming_the_problem(overrides, problem, recording_logger):
    registry = ToolRegistry(logger=recording_logger)
    with pytest.raises(ToolRegistrationError) as excinfo:
        registry.register(make_tool(**overrides))
    assert "HelloTool" in str(excinfo.value)
    assert problem in str(excinfo.value)
    assert len(registry) == 0
    assert recording_logger.errors and problem in recording_logger.errors[0][0]


def test_duplicate_names_are_refused():
    registry = ToolRegistry()
    registry.register(make_tool())
    with pytest.raises(ToolRegistrationError, match="already registered"):
        registry.register(make_tool())


def test_internal_registry_holds_the_builtin_tools_and_is_separate_from_mcp():
    registry = build_internal_registry()
    assert registry.kind == "internal"
    assert registry.get("agent_change_mode") is ModeChangeTool
    assert registry.get("agent_list_modes") is AgentListModesTool
    assert mcp_registry.kind == "mcp"
    assert "agent_change_mode" not in mcp_registry


NotBuiltPerTurn = make_tool()  # meets the tool contract, but has no offered() and for_turn()


def test_a_tool_listed_as_built_per_turn_must_say_how(monkeypatch):
    from tools import registry as registries

    assert [name for name, _tool in registries.build_per_turn_registry()] == ["tool_search", "mcp_read_resource"]
    monkeypatch.setattr(registries, "PER_TURN_TOOLS", {"hello_world": "tests.tools.test_registry.NotBuiltPerTurn"})
    with pytest.raises(ToolRegistrationError, match="hello_world is built per turn but has no offered"):
        registries.build_per_turn_registry()
