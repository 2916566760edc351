"""Composition root for tools: builds each turn's tool instances with their dependencies
(TUL-007 §3.2: the mode-change tool gets the session manager by injection)."""
from __future__ import annotations

from typing import Any

from aptix.logging import admin_logger
from modes.catalog import catalog_service
from tools.registry import internal_registry, mcp_registry

from .sessions import session_manager as default_session_manager


def build_internal_tools(*, session_manager=None, logger=None, image_remote=None) -> dict[str, Any]:
    """Instances of every registered internal tool, keyed by name."""
    manager = session_manager or default_session_manager
    log = logger or admin_logger
    factories = {
        "agent_change_mode": lambda cls: cls(manager, log),
        "agent_list_modes": lambda cls: cls(catalog_service, log),
        "image_gen": lambda cls: cls(log, remote=image_remote),
    }
    tools: dict[str, Any] = {}
    for name, cls in internal_registry():
        factory = factories.get(name)
        tools[name] = factory(cls) if factory else cls()
    return tools


def resolve_mcp_tool(name: str) -> Any | None:
    """An MCP tool entry (an object with an async `execute`), or None if the server is gone."""
    return mcp_registry.get(name)
