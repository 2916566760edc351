"""Tool registries (spec 004 §8): one for internal tools, one for MCP tools.

Registration checks the reflection contract of TUL-010 §3.1 and raises ToolRegistrationError
naming the tool and what is wrong, so a bad tool fails at start-up, not mid-conversation.
"""

from __future__ import annotations

import inspect
import re
from importlib import import_module
from typing import Any

from .base import BuiltPerTurn, ResultImage, ShowsImage, SummarisesResult

TOOL_NAME_RE = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")

# Internal tools by name → dotted path, imported lazily (explicit over import-time magic).
INTERNAL_TOOLS: dict[str, str] = {
    "agent_change_mode": "tools.builtin.mode_change.ModeChangeTool",
    "agent_list_modes": "tools.builtin.list_modes.AgentListModesTool",
    "image_gen": "tools.builtin.image_gen.ImageGenTool",
    "files_list": "tools.builtin.files_list.FilesListTool",
    "files_query": "tools.builtin.files_query.FilesQueryTool",
    "files_read": "tools.builtin.files_read.FilesReadTool",
    "document_write": "tools.builtin.documents.DocumentWriteTool",
    "document_read": "tools.builtin.documents.DocumentReadTool",
    "knowledge_search": "tools.builtin.knowledge_search.KnowledgeSearchTool",
}

# Internal tools whose instance is a turn's (tools/base.py BuiltPerTurn): the run builds them from the
# turn's tools when the turn offers them, so they are in neither registry's per-process instances.
PER_TURN_TOOLS: dict[str, str] = {
    "tool_search": "tools.builtin.tool_search.ToolSearchTool",
    "mcp_read_resource": "tools.builtin.read_resource.ReadResourceTool",
}


def needs_session_files(tool: Any) -> bool:
    """Whether a tool is offered only in a session that has files (the files_* tools declare it)."""
    return bool(getattr(tool, "NEEDS_SESSION_FILES", False))


def needs_project_knowledge(tool: Any) -> bool:
    """Whether a tool is offered only in a session whose project knowledge it may search, and then
    whatever the mode's tool policy says (knowledge_search declares it)."""
    return bool(getattr(tool, "NEEDS_PROJECT_KNOWLEDGE", False))


class ToolRegistrationError(ValueError):
    """A tool does not satisfy the registration contract."""


def validate_tool_contract(tool: Any) -> str:
    """Check a tool class (or object) against the contract; return its name or raise."""
    label = getattr(tool, "__name__", None) or type(tool).__name__

    def fail(problem: str) -> ToolRegistrationError:
        return ToolRegistrationError(f"Tool {label} cannot be registered: {problem}")

    name = getattr(tool, "TOOL_NAME", None)
    if not isinstance(name, str) or not name:
        raise fail("TOOL_NAME is missing or empty.")
    if not TOOL_NAME_RE.match(name):
        raise fail(f"TOOL_NAME {name!r} does not match {TOOL_NAME_RE.pattern}.")

    usage = getattr(tool, "TOOL_USAGE_METADATA", None)
    if not isinstance(usage, str) or not usage.strip():
        raise fail("TOOL_USAGE_METADATA is missing or empty.")

    if not isinstance(getattr(tool, "is_tool_fully_executed_on_server", None), bool):
        raise fail("is_tool_fully_executed_on_server must be a bool.")

    raw_get_schema = inspect.getattr_static(tool, "get_schema", None)
    if raw_get_schema is None:
        raise fail("get_schema() is missing.")
    if inspect.isclass(tool) and not isinstance(raw_get_schema, staticmethod):
        raise fail("get_schema() must be a @staticmethod.")
    get_schema = tool.get_schema
    if inspect.signature(get_schema).parameters:
        raise fail("get_schema() must take no parameters.")
    try:
        schema = get_schema()
    except Exception as exc:
        raise fail(f"get_schema() raised {type(exc).__name__}: {exc}") from exc
    _validate_schema(schema, name, fail)

    execute = getattr(tool, "execute", None)
    if execute is None or not inspect.iscoroutinefunction(execute):
        raise fail("execute(arguments_json, context) must be an async method.")
    return name


def _validate_schema(schema: Any, name: str, fail) -> None:
    if not isinstance(schema, dict):
        raise fail(f"get_schema() must return a dict, not {type(schema).__name__}.")
    if schema.get("type") != "function":
        raise fail('get_schema()["type"] must be "function".')
    function = schema.get("function")
    if not isinstance(function, dict):
        raise fail('get_schema()["function"] must be an object.')
    if function.get("name") != name:
        raise fail(f'get_schema()["function"]["name"] is {function.get("name")!r}, expected {name!r}.')
    description = function.get("description")
    if not isinstance(description, str) or not description.strip():
        raise fail('get_schema()["function"]["description"] must be a non-empty string.')
    parameters = function.get("parameters")
    if not isinstance(parameters, dict) or parameters.get("type") != "object":
        raise fail('get_schema()["function"]["parameters"] must be an object schema ("type": "object").')
    properties = parameters.get("properties", {})
    if not isinstance(properties, dict):
        raise fail('get_schema()["function"]["parameters"]["properties"] must be an object.')
    required = parameters.get("required", [])
    if not isinstance(required, list) or not all(isinstance(r, str) for r in required):
        raise fail('get_schema()["function"]["parameters"]["required"] must be a list of names.')
    unknown = [r for r in required if r not in properties]
    if unknown:
        raise fail(f"required parameters {unknown} are not declared in properties.")


class ToolRegistry:
    """Name → tool class. `kind` is "internal" or "mcp"; the two registries never mix."""

    def __init__(self, kind: str = "internal", logger: Any = None) -> None:
        self.kind = kind
        self._logger = logger
        self._tools: dict[str, Any] = {}
        # MCP: the servers the tools come from, by name (tools/mcp/entry.py ServerPort), added by the
        # host that runs them, so that a call of a server still starting (its tools not listed yet)
        # can wait for it. The internal registry has none.
        self._servers: dict[str, Any] = {}

    def register(self, tool_cls: Any) -> Any:
        try:
            name = validate_tool_contract(tool_cls)
        except ToolRegistrationError as exc:
            if self._logger is not None:
                self._logger.add_error(str(exc), registry=self.kind)
            raise
        existing = self._tools.get(name)
        if existing is not None and existing is not tool_cls:
            raise ToolRegistrationError(f"Tool {name!r} is already registered in the {self.kind} registry.")
        self._tools[name] = tool_cls
        return tool_cls

    def unregister(self, name: str) -> None:
        self._tools.pop(name, None)

    def get(self, name: str) -> Any | None:
        return self._tools.get(name)

    def add_server(self, name: str, server: Any) -> None:
        self._servers[name] = server

    def remove_server(self, name: str, server: Any) -> None:
        """Forget server `name`, unless another host has added its own since (a restart's new host)."""
        if self._servers.get(name) == server:
            del self._servers[name]

    def server(self, name: str) -> Any | None:
        """The MCP server `name` as the host publishing into this registry runs it (None: none does)."""
        return self._servers.get(name)

    def names(self) -> list[str]:
        return list(self._tools)

    def schemas(self) -> list[dict]:
        return [tool.get_schema() for tool in list(self._tools.values())]

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def __iter__(self):
        # A snapshot: the MCP host (un)registers tools from its own thread while turns iterate.
        return iter(list(self._tools.items()))

    def __len__(self) -> int:
        return len(self._tools)


def build_internal_registry(logger: Any = None) -> ToolRegistry:
    registry = ToolRegistry("internal", logger=logger)
    for dotted in INTERNAL_TOOLS.values():
        module_path, _, attr = dotted.rpartition(".")
        registry.register(getattr(import_module(module_path), attr))
    return registry


def build_per_turn_registry(logger: Any = None) -> ToolRegistry:
    registry = ToolRegistry("internal", logger=logger)
    for dotted in PER_TURN_TOOLS.values():
        module_path, _, attr = dotted.rpartition(".")
        tool = registry.register(getattr(import_module(module_path), attr))
        if not isinstance(tool, BuiltPerTurn):
            raise ToolRegistrationError(f"Tool {tool.TOOL_NAME} is built per turn but has no offered() and for_turn().")
    return registry


_internal_registry: ToolRegistry | None = None
_per_turn_registry: ToolRegistry | None = None


def internal_registry() -> ToolRegistry:
    """The process-wide internal registry, built (and checked) on first use."""
    global _internal_registry  # noqa: PLW0603 - one per process, built on first use
    if _internal_registry is None:
        _internal_registry = build_internal_registry()
    return _internal_registry


def per_turn_registry() -> ToolRegistry:
    """The internal tools built for each turn (PER_TURN_TOOLS), checked on first use."""
    global _per_turn_registry  # noqa: PLW0603 - one per process, built on first use
    if _per_turn_registry is None:
        _per_turn_registry = build_per_turn_registry()
    return _per_turn_registry


def internal_names() -> list[str]:
    """Every internal tool's name: those built once per process, then those built per turn."""
    return [*internal_registry().names(), *per_turn_registry().names()]


_always_offered: tuple[ToolRegistry, frozenset[str]] | None = None


def always_offered() -> frozenset[str]:
    """The internal tools that no mode policy, toggle or tool budget removes (`ALWAYS_OFFERED`): read
    once per registry, as the tool selection asks for every tool of every turn."""
    global _always_offered  # noqa: PLW0603 - derived from the process's one registry
    registry = internal_registry()
    if _always_offered is None or _always_offered[0] is not registry:
        names = frozenset(name for name, tool in registry if getattr(tool, "ALWAYS_OFFERED", False))
        _always_offered = (registry, names)
    return _always_offered[1]


def internal_tool(name: str) -> Any | None:
    """The internal tool class `name`, built once per process or per turn (None if unknown)."""
    return internal_registry().get(name) or per_turn_registry().get(name)


def tools_with(capability: type) -> list[tuple[str, Any]]:
    """(name, class) of the internal tools that declare `capability` (a Protocol of tools/base.py),
    per-process ones first: how the run finds, say, the tool that searches tools without naming it."""
    return [(name, tool) for name, tool in [*internal_registry(), *per_turn_registry()] if isinstance(tool, capability)]


# MCP tools are registered by the MCP host as servers come up (named `<server>__<tool>`).
mcp_registry = ToolRegistry("mcp")


def _tool_named(name: str) -> Any | None:
    return internal_tool(name) or mcp_registry.get(name)


def result_image(name: str, result: str) -> ResultImage | None:
    """The image a successful result of the tool `name` shows on this site, if the tool says it
    has one (tools/base.py ShowsImage)."""
    tool = _tool_named(name)
    return tool.result_image(result) if isinstance(tool, ShowsImage) and result else None


def result_is_answer(name: str) -> bool:
    """Whether a successful result of the tool `name` is by itself what the user asked for (a mode
    changed, an image drawn: the tool declares `RESULT_IS_ANSWER`), so that an Ask answer with no text
    of the model's shows it as the answer rather than under a label."""
    return bool(getattr(_tool_named(name), "RESULT_IS_ANSWER", False))


def result_markdown(name: str, result: str) -> str | None:
    """A successful result of the tool `name` as an Ask answer shows it, if the tool says how
    (tools/base.py SummarisesResult); None: shown raw."""
    tool = _tool_named(name)
    return tool.result_markdown(result) if isinstance(tool, SummarisesResult) else None
