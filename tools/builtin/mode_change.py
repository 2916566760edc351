"""agent_change_mode (TUL-007): change the current session's mode after the user agreed.

Validation of the mode against the catalog lives in the session manager (TUL-009, DESIGN.md
"Reconciling the records"): this tool only checks the argument shapes, takes the session, team
and user from the execution context, and makes exactly one `set_session_mode` call.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, ClassVar

from modes.catalog import ModeValidationError

from ..arguments import ToolArgumentError, json_object_arguments
from ..base import AgentTool, InvokeResult, ModeChanged, ToolContext, ToolDependencies, function_schema, json_result

ERROR_EMPTY_ARGUMENTS = "ModeChangeTool requires a non-empty arguments object."
ERROR_NO_CONTEXT = "ModeChangeTool requires a valid execution context."
ERROR_NO_SESSION = "ModeChangeTool cannot change mode because the session id is missing."
ERROR_MODE = "ModeChangeTool requires a non-empty 'mode' string."
ERROR_BRANCH = "ModeChangeTool requires a 'branch' boolean flag."
ERROR_REASON = "ModeChangeTool requires a non-empty 'reason' string explaining why the mode change is needed."
ERROR_FAILED = "ModeChangeTool failed to change the session mode."
ERROR_INVALID_JSON = "ModeChangeTool requires the arguments to be a valid JSON object."
ERROR_IDENTITY_ARGUMENT = (
    "ModeChangeTool does not accept {names} in the arguments; the session, org and user come from "
    "the execution context. Call it again with only 'mode', 'branch' and 'reason'."
)

# Stable tag for the admin log, so operators can find every failed mode change.
LOG_TAG = "ModeChangeTool.SetSessionMode"

# Identity must never come from the model (TUL-007 §3.3, §4.3).
_IDENTITY_ARGUMENTS = ("sessionId", "session_id", "org", "orgId", "org_id", "user", "userId", "user_id")


class ModeChangeTool(AgentTool):
    TOOL_NAME: ClassVar[str] = "agent_change_mode"
    TOOL_USAGE_METADATA: ClassVar[str] = (
        "Use this tool to change the current agent session mode once the user explicitly agreed. If "
        "another mode clearly fits better, propose it, say why and ask: (1) stay in the current mode, "
        "(2) switch this session (branch=false), (3) switch and start a new session (branch=true). Give "
        "a non-empty mode and reason, never sessionId, org or user. Use sparingly."
    )
    SCHEMA_DESCRIPTION: ClassVar[str] = (
        "Changes this session's mode once the user confirms; branch=true: in a new session."
    )
    is_tool_fully_executed_on_server = True
    RESULT_IS_ANSWER: ClassVar[bool] = True  # an Ask answer may be this result alone (tools/base.py)
    ALWAYS_OFFERED: ClassVar[bool] = True  # TUL-007 §3.1: no mode, policy or toggle removes it

    @staticmethod
    def mode_changed(result: str) -> ModeChanged | None:
        """The change a successful call made (tools/base.py ChangesMode): the run's mode follows it."""
        data = json_result(result)
        if data is None:
            return None
        return {
            "previousMode": data.get("previousMode"),
            "newMode": str(data.get("newMode") or data.get("mode") or ""),
            "reason": str(data.get("reason", "")),
            "branch": bool(data.get("branch")),
        }

    @staticmethod
    def result_markdown(result: str) -> str | None:
        """An Ask answer says what changed (and, for a branch, where to go on)."""
        data = json_result(result)
        if data is None:
            return None
        line = f"Mode changed: {data.get('previousMode')} → {data.get('newMode')}."
        return line + (" Continue in a new session in that mode." if data.get("branch") else "")

    @classmethod
    def from_dependencies(cls, deps: ToolDependencies) -> ModeChangeTool:
        return cls(deps.session_manager, deps.logger)

    def __init__(self, session_manager: Any, logger: Any) -> None:
        if session_manager is None:
            raise ValueError("ModeChangeTool requires a session manager (got None).")
        if logger is None:
            raise ValueError("ModeChangeTool requires an admin logger (got None).")
        self._session_manager = session_manager
        self._logger = logger

    @staticmethod
    def get_schema() -> dict:
        return function_schema(
            ModeChangeTool.TOOL_NAME,
            ModeChangeTool.SCHEMA_DESCRIPTION,
            {
                "mode": {
                    "type": "string",
                    "description": "Target mode key.",
                },
                "branch": {"type": "boolean"},
                "reason": {"type": "string", "description": "Why it fits the request."},
            },
            required=["mode", "branch", "reason"],
        )

    async def execute(self, arguments_json: str | None, context: ToolContext | None) -> InvokeResult:
        if arguments_json is None or not str(arguments_json).strip():
            return InvokeResult.from_error(ERROR_EMPTY_ARGUMENTS)
        if context is None:
            return InvokeResult.from_error(ERROR_NO_CONTEXT)
        if not context.session_id:
            self._logger.add_error(
                "ModeChangeTool was called without a session id in the execution context.",
                tool=self.TOOL_NAME,
                turn_id=context.turn_id,
                tool_call_id=context.tool_call_id,
            )
            return InvokeResult.from_error(ERROR_NO_SESSION)
        try:
            request = _parse_arguments(arguments_json)
        except ToolArgumentError as exc:
            return InvokeResult.from_error(str(exc))
        return await self._change_mode(request, context)

    async def _change_mode(self, request: _ModeRequest, context: ToolContext) -> InvokeResult:
        """Exactly one set_session_mode call; a failure is logged and comes back as a tool error."""
        try:
            outcome = await self._session_manager.set_session_mode(
                context.session_id,
                request.mode,
                request.reason,
                context.org,
                context.user,
                branch=request.branch,
                turn=context.turn_id,
                tool_call_id=context.tool_call_id,
            )
        except ModeValidationError as exc:
            # The model can recover from this one: tell it which modes exist.
            self._log_failure(exc, context, request.mode)
            return InvokeResult.from_error(f"{ERROR_FAILED} {exc}")
        except Exception as exc:  # noqa: BLE001 - any failure must come back as a tool error
            self._log_failure(exc, context, request.mode)
            return InvokeResult.from_error(ERROR_FAILED)
        return _success(request, outcome)

    def _log_failure(self, exc: BaseException, context: ToolContext, mode: str) -> None:
        self._logger.add_exception(
            exc,
            LOG_TAG,
            session_id=context.session_id,
            requested_mode=mode,
            turn_id=context.turn_id,
            tool_call_id=context.tool_call_id,
        )


def _unpack_outcome(outcome: Any, requested: str) -> tuple[str | None, str]:
    """set_session_mode returns (previous, new); a manager that reports nothing still wrote `requested`."""
    if (
        isinstance(outcome, (tuple, list))
        and len(outcome) == 2
        and all(isinstance(v, str) or v is None for v in outcome)
    ):
        previous, new = outcome
        return previous, new or requested
    return None, requested


@dataclass(frozen=True)
class _ModeRequest:
    """The model's arguments, checked: the target mode, whether to branch, and why."""

    mode: str
    branch: bool
    reason: str


def _parse_arguments(arguments_json: str) -> _ModeRequest:
    args = json_object_arguments(arguments_json, ERROR_INVALID_JSON)

    identity = [name for name in _IDENTITY_ARGUMENTS if name in args]
    if identity:
        raise ToolArgumentError(ERROR_IDENTITY_ARGUMENT.format(names=", ".join(f"'{n}'" for n in identity)))

    mode = args.get("mode")
    if not isinstance(mode, str) or not mode.strip():
        raise ToolArgumentError(ERROR_MODE)
    branch = args.get("branch")
    if not isinstance(branch, bool):
        raise ToolArgumentError(ERROR_BRANCH)
    reason = args.get("reason")
    if not isinstance(reason, str) or not reason.strip():
        raise ToolArgumentError(ERROR_REASON)
    return _ModeRequest(mode=mode, branch=branch, reason=reason)


def _success(request: _ModeRequest, outcome: Any) -> InvokeResult:
    previous_mode, new_mode = _unpack_outcome(outcome, request.mode)
    payload = {
        "success": True,
        "mode": new_mode,
        "branch": request.branch,
        "reason": request.reason,
        "previousMode": previous_mode,
        "newMode": new_mode,
    }
    return InvokeResult.create(json.dumps(payload))
