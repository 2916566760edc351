"""JSON API for programs: `POST /api/v1/agent/execute` (AGN-011's AgentExecuteRequest/Response).

Bearer token first, then the body is parsed and checked field by field (400 naming the field),
then one service call creates what the turn needs in a single transaction, the run is dispatched,
and the response is sent when the turn ends (or waits for the client's tool results).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from asgiref.sync import sync_to_async
from django.core.exceptions import ValidationError
from django.db import transaction
from django.http import JsonResponse
from django.views.decorators.csrf import csrf_exempt

from agents.approvals import CODE_STALE, UserDecision, approval_decide
from agents.events.payloads import branch_of
from agents.llm import get_llm_client
from agents.models import Execution, Turn
from agents.run.current import get_runner
from agents.run.pipeline import normalize_turn_mode
from agents.sessions import ERROR_BAD_EXECUTION, SessionNotFoundError, session_create, session_get
from agents.state import PausedState, turn_state
from agents.turns import (
    CODE_NOTHING_TO_CONTINUE,
    CODE_SESSION_DELETED,
    CODE_TURN_RUNNING,
    error_code,
    turn_cancel,
    turn_claim_results,
    turn_start,
)
from aptix.bearer import RateLimited, bearer_user
from aptix.inputs import unstorable_in
from aptix.ratelimits import TURNS, Limited, rate_limit, user_key
from aptix.teams import team_list_for_user
from modes.catalog import ModeValidationError, mode_validate
from tools.registry import TOOL_NAME_RE, internal_registry, mcp_registry

# Service error codes (ValidationError.code) that are not a plain 400.
STATUS_OF_CODE = {CODE_TURN_RUNNING: 409, CODE_NOTHING_TO_CONTINUE: 409, CODE_SESSION_DELETED: 404}


class ApiError(Exception):
    def __init__(self, status: int, message: str, field: str | None = None, *, retry_after: int | None = None) -> None:
        super().__init__(message)
        self.status, self.message, self.field, self.retry_after = status, message, field, retry_after

    @classmethod
    def too_many(cls, limited: Limited) -> ApiError:
        return cls(429, limited.message, retry_after=limited.retry_after)

    def response(self) -> JsonResponse:
        response = JsonResponse({"error": {"message": self.message, "field": self.field}}, status=self.status)
        if self.retry_after is not None:
            response["Retry-After"] = str(self.retry_after)
        return response


@dataclass
class ExecuteRequest:
    conversation_id: str | None
    mode: str | None
    execution: str | None
    message: str | None
    tools: list[dict] = field(default_factory=list)
    tool_results: list[dict] = field(default_factory=list)
    approvals: list[UserDecision] = field(default_factory=list)
    choice: Any = None
    resume: bool = False  # "continue": carry on after a turn that stopped at a limit


def _optional_str(body: dict, name: str) -> str | None:
    value = body.get(name)
    if value is not None and not isinstance(value, str):
        raise ApiError(400, f"'{name}' must be a string or null.", name)
    return value


def _json_body(raw: bytes) -> dict:
    """The request body as a JSON object whose every string can be stored, or an ApiError naming why not."""
    try:
        body = json.loads(raw or b"")
    except (ValueError, UnicodeDecodeError):
        raise ApiError(400, "The request body must be a JSON object.", None) from None
    except RecursionError:
        raise ApiError(400, "The request body is nested too deeply.", None) from None
    if not isinstance(body, dict):
        raise ApiError(400, "The request body must be a JSON object.", None)
    if bad := unstorable_in(body):
        raise ApiError(400, f"'{bad[0]}' contains {bad[1]}.", bad[0])
    return body


EXECUTE_FIELDS = frozenset(
    {"conversationId", "mode", "execution", "message", "tools", "toolResults", "approvals", "choice", "continue"}
)


def parse_execute_request(raw: bytes) -> ExecuteRequest:
    body = _json_body(raw)
    known = EXECUTE_FIELDS
    unknown = sorted(set(body) - known)
    if unknown:
        raise ApiError(400, f"Unknown field '{unknown[0]}'. Known fields: {', '.join(sorted(known))}.", unknown[0])
    request = ExecuteRequest(
        conversation_id=_optional_str(body, "conversationId") or None,
        mode=_optional_str(body, "mode"),
        execution=_optional_str(body, "execution"),
        message=_optional_str(body, "message"),
    )
    if request.execution is not None and request.execution not in Execution.values:
        raise ApiError(400, ERROR_BAD_EXECUTION, "execution")
    request.tools = _parse_tools(body.get("tools"))
    request.tool_results = _parse_tool_results(body.get("toolResults"))
    request.approvals = _parse_approvals(body.get("approvals"))
    request.choice = body.get("choice")
    resume = body.get("continue", False)
    if not isinstance(resume, bool):
        raise ApiError(400, "'continue' must be true or false.", "continue")
    request.resume = resume
    if resume and not request.conversation_id:
        raise ApiError(400, "'conversationId' is required with 'continue'.", "conversationId")
    if request.approvals:
        if not request.conversation_id:
            raise ApiError(400, "'conversationId' is required with 'approvals'.", "conversationId")
        if request.message or request.tool_results:
            raise ApiError(
                400, "'approvals' continue a turn: send them without 'message' or 'toolResults'.", "approvals"
            )
    elif request.tool_results:
        if not request.conversation_id:
            raise ApiError(400, "'conversationId' is required with 'toolResults'.", "conversationId")
    elif not (request.message or "").strip() and not request.resume:
        raise ApiError(400, "'message' is required (a non-empty string).", "message")
    return request


def _parse_tools(value: Any) -> list[dict]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise ApiError(400, "'tools' must be a list of function tool schemas.", "tools")
    server_names = set(internal_registry().names()) | set(mcp_registry.names())
    seen: set[str] = set()
    for i, tool in enumerate(value):
        where = f"tools[{i}]"
        function = tool.get("function") if isinstance(tool, dict) else None
        if not isinstance(tool, dict) or tool.get("type") != "function" or not isinstance(function, dict):
            raise ApiError(400, f"'{where}' must be {{\"type\": \"function\", \"function\": {{...}}}}.", where)
        name = function.get("name")
        if not isinstance(name, str) or not TOOL_NAME_RE.match(name):
            raise ApiError(400, f"'{where}.function.name' must match {TOOL_NAME_RE.pattern}.", f"{where}.function.name")
        if name in server_names:
            raise ApiError(
                400,
                f"'{where}.function.name' {name!r} is a server tool name; choose another.",
                f"{where}.function.name",
            )
        if name in seen:
            raise ApiError(400, f"'{where}.function.name' {name!r} is given twice.", f"{where}.function.name")
        seen.add(name)
        params = function.get("parameters", {"type": "object", "properties": {}})
        if not isinstance(params, dict):
            raise ApiError(
                400, f"'{where}.function.parameters' must be a JSON schema object.", f"{where}.function.parameters"
            )
    return value


def _parse_tool_results(value: Any) -> list[dict]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise ApiError(400, "'toolResults' must be a list.", "toolResults")
    for i, item in enumerate(value):
        where = f"toolResults[{i}]"
        if not isinstance(item, dict):
            raise ApiError(400, f"'{where}' must be an object with 'toolCallId' and 'content'.", where)
        if not isinstance(item.get("toolCallId"), str) or not item["toolCallId"]:
            raise ApiError(400, f"'{where}.toolCallId' must be a non-empty string.", f"{where}.toolCallId")
        if not isinstance(item.get("content"), str):
            raise ApiError(400, f"'{where}.content' must be a string.", f"{where}.content")
    return value


def _parse_approvals(value: Any) -> list[UserDecision]:
    if value is None:
        return []
    if not isinstance(value, list) or not value:
        raise ApiError(400, "'approvals' must be a non-empty list of decisions.", "approvals")
    decisions = []
    for i, item in enumerate(value):
        where = f"approvals[{i}]"
        if not isinstance(item, dict):
            raise ApiError(400, f"'{where}' must be an object with 'toolCallId' and 'decision'.", where)
        if not isinstance(item.get("toolCallId"), str) or not item["toolCallId"]:
            raise ApiError(400, f"'{where}.toolCallId' must be a non-empty string.", f"{where}.toolCallId")
        if item.get("decision") not in ("approve", "deny"):
            raise ApiError(400, f"'{where}.decision' must be \"approve\" or \"deny\".", f"{where}.decision")
        scope = item.get("scope") or "once"
        if scope not in ("once", "session"):
            raise ApiError(400, f"'{where}.scope' must be \"once\" or \"session\".", f"{where}.scope")
        branch = item.get("branch")
        if branch is not None and not isinstance(branch, bool):
            raise ApiError(400, f"'{where}.branch' must be true, false or null.", f"{where}.branch")
        decisions.append(UserDecision(item["toolCallId"], item["decision"] == "approve", scope, branch))
    return decisions


def prepare_turn(*, user, request: ExecuteRequest) -> Turn:
    """Create (or load) the session and the turn in one transaction: nothing is half-written."""
    if request.approvals:
        return _decided_turn(user=user, request=request)
    if request.tool_results:
        return _pending_turn(user=user, request=request)
    with transaction.atomic():
        if request.conversation_id:
            try:
                session = session_get(user=user, session_id=request.conversation_id)
            except SessionNotFoundError:
                raise ApiError(404, "No conversation with this id.", "conversationId") from None
            normalize_turn_mode(session=session, requested_mode=request.mode)
        else:
            team = team_list_for_user(user=user).first()
            if team is None:
                raise ApiError(403, "You are not a member of any team; ask an administrator to add you.")
            if request.mode and request.mode.strip():
                try:
                    mode_validate(request.mode)
                except ModeValidationError as exc:
                    raise ApiError(400, str(exc), "mode") from None
            session = session_create(team=team, user=user, mode=request.mode, execution=request.execution or "ask")
        try:
            return turn_start(
                session=session,
                text=request.message or "",
                execution=request.execution,
                choice=request.choice,
                resume=request.resume,
            )
        except ValidationError as exc:
            field_name = next(iter(getattr(exc, "message_dict", {}) or {}), None)
            status = STATUS_OF_CODE.get(error_code(exc) or "", 400)
            raise ApiError(status, " ".join(exc.messages), field_name) from None


def _pending_turn(*, user, request: ExecuteRequest) -> Turn:
    try:
        session = session_get(user=user, session_id=request.conversation_id or "")
    except SessionNotFoundError:
        raise ApiError(404, "No conversation with this id.", "conversationId") from None
    turn = session.turns.order_by("-index").first()
    if turn is None or turn.status != Turn.Status.REQUIRES_ACTION:
        raise ApiError(409, "This conversation is not waiting for tool results.", "toolResults")
    pending = {call["id"] for call in PausedState.from_json(turn.state).pending}
    given = [r["toolCallId"] for r in request.tool_results]
    unknown = [g for g in given if g not in pending]
    if unknown:
        raise ApiError(400, f"Unknown toolCallId {unknown[0]!r}; pending: {', '.join(sorted(pending))}.", "toolResults")
    missing = sorted(pending - set(given))
    if missing:
        raise ApiError(400, f"Missing results for toolCallId {', '.join(missing)}.", "toolResults")
    if not turn_claim_results(turn):  # a second request for the same results lost the race
        raise ApiError(409, "This turn is already being continued with these tool results.", "toolResults")
    return turn


def _decided_turn(*, user, request: ExecuteRequest) -> Turn:
    try:
        session = session_get(user=user, session_id=request.conversation_id or "")
    except SessionNotFoundError:
        raise ApiError(404, "No conversation with this id.", "conversationId") from None
    turn = session.turns.order_by("-index").first()
    if turn is None or turn.status != Turn.Status.AWAITING_APPROVAL:
        raise ApiError(409, "This conversation is not waiting for approvals.", "approvals")
    try:
        approval_decide(turn=turn, decisions=request.approvals, user=user, complete=True)
    except ValidationError as exc:
        field_name = next(iter(getattr(exc, "message_dict", {}) or {}), "approvals")
        status = 409 if error_code(exc) == CODE_STALE else 400
        raise ApiError(status, " ".join(exc.messages), field_name) from None
    return turn


def execute_response(turn: Turn) -> dict:
    state = turn_state(turn)
    changes = state.mode_changes if state is not None else []
    pending = state.pending if isinstance(state, PausedState) else []
    branch = branch_of(changes)
    return {
        "conversationId": turn.session_id,
        "turnId": turn.id,
        "mode": turn.response_mode or turn.mode,
        "execution": turn.execution,
        "status": turn.status,
        "answer": turn.answer,
        "error": turn.error or None,
        "branch": branch,
        "toolCalls": [
            {"id": c["id"], "type": "function", "function": {"name": c["name"], "arguments": c["arguments"]}}
            for c in pending
        ],
        "approvals": [
            {
                "toolCallId": c["id"],
                "tool": c["name"],
                "kind": c["kind"],
                "arguments": c["arguments"],
                "reason": c["reason"] or None,
            }
            for c in (state.awaiting if isinstance(state, PausedState) else [])
        ],
        "modeChanges": [
            {"previousMode": c["previousMode"], "newMode": c["newMode"], "reason": c["reason"], "branch": c["branch"]}
            for c in changes
        ],
        "usage": {"promptTokens": turn.prompt_tokens, "completionTokens": turn.completion_tokens},
        "model": turn.model_label or get_llm_client().label,
    }


async def _authenticate(request):
    """The token's user, within the rate limits (aptix/bearer.py): 429 past them, 401 without a valid token."""
    try:
        user = await sync_to_async(bearer_user)(request)
    except RateLimited as exc:
        raise ApiError.too_many(exc.limited) from None
    if user is None:
        raise ApiError(401, "Missing or invalid bearer token. Send 'Authorization: Bearer <token>'.")
    return user


@csrf_exempt
async def agent_execute(request):
    try:
        user = await _authenticate(request)  # auth before anything else
        if request.method != "POST":
            raise ApiError(405, "Use POST.")
        parsed = parse_execute_request(request.body)
        new_turn = not (parsed.approvals or parsed.tool_results)  # counted against the user's turn rate
        if new_turn and (limited := await sync_to_async(rate_limit)(TURNS, user_key(user), request)):
            raise ApiError.too_many(limited)
        turn = await sync_to_async(prepare_turn)(user=user, request=parsed)
        runner = get_runner()
        started = runner.start(turn.id, client_tools=parsed.tools, tool_results=parsed.tool_results or None)
        turn = await runner.wait(turn.id, started)
    except ApiError as exc:
        return exc.response()
    return JsonResponse(execute_response(turn))


@csrf_exempt
async def turn_cancel_api(request, turn_id: str):
    try:
        user = await _authenticate(request)
        if request.method != "POST":
            raise ApiError(405, "Use POST.")
        turn = await Turn.objects.filter(pk=turn_id, session__user=user).afirst()
        if turn is None:
            raise ApiError(404, "No turn with this id.", "turnId")
        cancelled = await turn_cancel(turn=turn)
    except ApiError as exc:
        return exc.response()
    return JsonResponse({"turnId": turn_id, "cancelRequested": cancelled}, status=202 if cancelled else 200)
