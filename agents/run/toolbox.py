"""Composition root for tools: builds each turn's internal tool instances with their dependencies
(TUL-007 §3.2: the mode-change tool gets the session manager by injection). Every tool registered in
`tools.registry.INTERNAL_TOOLS` is built here, from `from_dependencies` when it has one."""

from __future__ import annotations

from typing import Any

from aptix.logging import admin_logger
from modes.catalog import catalog_service
from tools.base import ToolDependencies
from tools.registry import internal_registry

from ..documents.services import document_store
from ..sessions import session_manager as default_session_manager


def build_internal_tools(
    *, session_manager: Any = None, logger: Any = None, image_remote: Any = None
) -> dict[str, Any]:
    """Instances of every registered internal tool, keyed by name."""
    deps = ToolDependencies(
        logger=logger or admin_logger,
        session_manager=session_manager or default_session_manager,
        catalog=catalog_service,
        image_remote=image_remote,
        documents=document_store,
    )
    tools: dict[str, Any] = {}
    for name, cls in internal_registry():
        build = getattr(cls, "from_dependencies", None)
        tools[name] = build(deps) if build is not None else cls()
    return tools
