"""The MCP registry's side of the host: which tools of which server are published, kept exactly in
step with each server's latest tools/list answer (unchanged entries are kept, so a refresh does not
disturb a call in flight)."""

from __future__ import annotations

from collections.abc import Callable

import mcp_types as types

from tools.registry import ToolRegistrationError, ToolRegistry

from .apps import for_app, for_model
from .entry import MAX_TOOL_NAME, McpToolEntry, ServerPort, registry_name
from .supervisor import Published


class ToolPublisher:
    def __init__(self, registry: ToolRegistry, port_for: Callable[[str], ServerPort]) -> None:
        self.registry = registry
        self._port_for = port_for
        self._entries: dict[str, dict[str, McpToolEntry]] = {}
        # Each server's tools its MCP Apps may call (apps.py visibility "app"), by the server's name for
        # them; those only for apps ("visibility": ["app"]) are kept here and never offered to the model.
        self._for_apps: dict[str, dict[str, types.Tool]] = {}

    def publish(self, server: str, tools: list[types.Tool]) -> Published:
        """Make the registry hold exactly these tools for `server`; unchanged entries are kept.
        Tools that cannot be published are reported, each with why (the supervisor logs them)."""
        current = self._entries.get(server, {})
        wanted: dict[str, McpToolEntry] = {}
        dropped: list[tuple[str, str]] = []
        self._for_apps[server] = {tool.name: tool for tool in tools if for_app(tool)}
        for tool in tools:
            if not for_model(tool):
                continue
            name = registry_name(server, tool.name)
            if name is None:
                dropped.append((tool.name, f"its name would be longer than {MAX_TOOL_NAME} characters as {server}__…"))
                continue
            if name in wanted:
                other = wanted[name].tool.name
                dropped.append((tool.name, f'its name collides with "{other}" (both become {name})'))
                continue
            entry = current.get(name)
            if entry is None or not entry.same_definition(tool):
                entry = McpToolEntry(server=server, tool=tool, name=name, port=self._port_for(server))
            wanted[name] = entry
        for name, entry in current.items():
            if wanted.get(name) is not entry and self.registry.get(name) is entry:
                self.registry.unregister(name)
        published = {}
        for name, entry in wanted.items():
            problem = self._register(entry)
            if problem:
                dropped.append((entry.tool.name, problem))
            else:
                published[name] = entry
        self._entries[server] = published
        renamed = tuple((name, entry.tool.name) for name, entry in published.items() if entry.label != entry.tool.name)
        return Published(names=tuple(published), dropped=tuple(dropped), renamed=renamed)

    def _register(self, entry: McpToolEntry) -> str:
        """Register `entry` unless it already is; the problem when the registry refuses it."""
        if self.registry.get(entry.TOOL_NAME) is entry:
            return ""
        try:
            self.registry.register(entry)
        except ToolRegistrationError as exc:
            return str(exc)
        return ""

    def app_tool(self, server: str, tool: str) -> types.Tool | None:
        """`server`'s tool `tool` (its own name) if its MCP Apps may call it."""
        return self._for_apps.get(server, {}).get(tool)

    def withdraw(self, server: str) -> None:
        self._for_apps.pop(server, None)
        for name, entry in self._entries.pop(server, {}).items():
            if self.registry.get(name) is entry:
                self.registry.unregister(name)

    def withdraw_all(self) -> None:
        for server in list(self._entries):
            self.withdraw(server)
