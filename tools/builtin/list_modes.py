"""agent_list_modes (TUL-010): a read-only view of the mode catalog for the model."""

from __future__ import annotations

import json
from typing import Any, ClassVar

from ..base import AgentTool, InvokeResult, ToolContext, ToolDependencies, function_schema, json_result

ERROR_CATALOG_UNAVAILABLE = "AgentListModesTool could not load the mode catalog. Try again later."
ERROR_INVALID_JSON = "AgentListModesTool requires the arguments to be a JSON object, e.g. {\"includeExamples\": true}."
ERROR_INCLUDE_EXAMPLES = "AgentListModesTool requires 'includeExamples' to be a boolean when given."

LOG_TAG = "AgentListModesTool.GetAllModes"


class AgentListModesTool(AgentTool):
    TOOL_NAME: ClassVar[str] = "agent_list_modes"
    TOOL_USAGE_METADATA: ClassVar[str] = (
        "Read-only mode catalog, for when the user asks what modes are available or is choosing between "
        "modes, or to propose a mode change. Do not call it on every user message or when no options are "
        "needed. Informational only: no substitute for agent_change_mode."
    )
    SCHEMA_DESCRIPTION: ClassVar[str] = "Lists the agent modes."
    is_tool_fully_executed_on_server = True

    @staticmethod
    def result_markdown(result: str) -> str | None:
        """An Ask answer lists the modes, one line each."""
        data = json_result(result)
        if data is None or "modes" not in data:
            return None
        return "\n".join(
            f"- **{m.get('displayName')}** (`{m.get('key')}`) — {m.get('description')}" for m in data["modes"]
        )

    @classmethod
    def from_dependencies(cls, deps: ToolDependencies) -> AgentListModesTool:
        return cls(deps.catalog, deps.logger)

    def __init__(self, catalog_service: Any, logger: Any) -> None:
        if catalog_service is None:
            raise ValueError("AgentListModesTool requires a catalog service (got None).")
        if logger is None:
            raise ValueError("AgentListModesTool requires an admin logger (got None).")
        self._catalog = catalog_service
        self._logger = logger

    @staticmethod
    def get_schema() -> dict:
        return function_schema(
            AgentListModesTool.TOOL_NAME,
            AgentListModesTool.SCHEMA_DESCRIPTION,
            {
                "includeExamples": {
                    "type": "boolean",
                    "description": "Include example requests per mode.",
                }
            },
        )

    async def execute(self, arguments_json: str | None, context: ToolContext | None) -> InvokeResult:
        include_examples = False
        if arguments_json is not None and str(arguments_json).strip():
            try:
                args = json.loads(arguments_json)
            except (TypeError, ValueError):
                return InvokeResult.from_error(ERROR_INVALID_JSON)
            if args is None:
                args = {}
            if not isinstance(args, dict):
                return InvokeResult.from_error(ERROR_INVALID_JSON)
            value = args.get("includeExamples", False)
            if value is None:
                value = False
            if not isinstance(value, bool):
                return InvokeResult.from_error(ERROR_INCLUDE_EXAMPLES)
            include_examples = value

        session_id = getattr(context, "session_id", None)
        try:
            modes = await self._modes(context)
        except Exception as exc:  # noqa: BLE001 - a catalog failure is a tool error, never a crash
            self._logger.add_exception(exc, LOG_TAG, session_id=session_id)
            return InvokeResult.from_error(ERROR_CATALOG_UNAVAILABLE)
        if modes is None:
            self._logger.add_error(
                "AgentListModesTool: the catalog service returned no modes (None).",
                tag=LOG_TAG,
                session_id=session_id,
            )
            return InvokeResult.from_error(ERROR_CATALOG_UNAVAILABLE)

        try:
            payload = {"modes": [_describe(mode, include_examples) for mode in modes]}
            return InvokeResult.create(json.dumps(payload))
        except Exception as exc:  # noqa: BLE001 - a malformed summary must not escape as an exception
            self._logger.add_exception(exc, LOG_TAG, session_id=session_id)
            return InvokeResult.from_error(ERROR_CATALOG_UNAVAILABLE)

    async def _modes(self, context: ToolContext | None) -> Any:
        """The catalog of the session's team (team catalogs: only the modes it may use), or the whole
        catalog without a team (or from a catalog service that knows no teams)."""
        org = getattr(context, "org", None)
        for_team = getattr(self._catalog, "get_modes_for_team", None)
        if org is not None and for_team is not None:
            return await for_team(org)
        return await self._catalog.get_all_modes()


def _describe(mode: Any, include_examples: bool) -> dict:
    hints = getattr(mode, "human_role_hints", None)
    examples = getattr(mode, "example_utterances", None)
    return {
        "id": str(mode.id),
        "key": str(mode.key),
        "displayName": str(mode.display_name),
        "description": str(mode.description or ""),
        "systemPromptSummary": str(getattr(mode, "system_prompt_summary", "") or ""),
        "isDefault": bool(mode.is_default),
        "humanRoleHints": [str(h) for h in hints] if hints else [],
        "exampleUtterances": ([str(e) for e in examples] if examples else []) if include_examples else None,
    }
