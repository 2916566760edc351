"""JSON API for programs: `POST /api/v1/agent/execute` (AGN-011's AgentExecuteRequest/Response).

Bearer token first, then the body is parsed and checked field by field (400 naming the field),
then one service call creates what the turn needs in a single transaction, the run is dispatched,
and the response is sent when the turn ends (or waits for the client's tool results).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import partial
from typing import TYPE_CHECKING, Any

from asgiref.sync import sync_to_async
from django.core.exceptions import ValidationError
from django.db import transaction
from django.http import HttpRequest, JsonResponse
from django.views.decorators.csrf import csrf_exempt

from agents.approvals import CODE_STALE, UserDecision, approval_decide
from agents.attachments import clean_file_ids
from agents.branching import switch_continues, turn_continue_after_switch
from agents.conversations import session_start
from agents.events.payloads import branch_of
from agents.llm import get_llm_client
from agents.models import Execution
from agents.run.pipeline import normalize_turn_mode
from agents.runner import get_runner
from agents.selectors import turn_continued_aget, turn_last, turn_of_user_aget
from agents.sessions import ERROR_BAD_EXECUTION, ERROR_NO_PROJECT
from agents.state import PausedState, turn_state
from agents.submit import Submitted, turn_submit
from agents.turns import Status, turn_cancel, turn_claim_results, turn_start
from agents.web.connections import connect_url
from aptix.bearer import token_modes
from aptix.preferences import preferences_get
from aptix.ratelimits import TURNS, rate_limit, user_key
from aptix.teams import team_list_for_user
from modes.catalog import mode_usable
from projects.services import ProjectNotFoundError, project_get
from tools.registry import TOOL_NAME_RE, internal_registry, mcp_registry

from .api_answers import answer_of, answer_question, question_fields
from .api_support import ApiError, authenticate, conversation_get, json_body, no_turn

if TYPE_CHECKING:
    from agents.models import AgentSession, Turn
    from projects.models import Project


ERROR_PROJECT_WITH_CONVERSATION = "'projectId' starts a new conversation: send it without 'conversationId'."
ERROR_TOKEN_MODE = "This API token may not use the mode {mode!r}: it is limited to {modes}."


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
    files: list[str] = field(default_factory=list)  # ids of the user's uploads the message carries
    resources: Any = None  # MCP resources the message carries ({"server", "uri"}; checked by turn_start)
    project_id: str | None = None  # the project a new conversation starts in
    origin: str = ""  # where a new conversation came from, for the sidebar (the MCP server's "via MCP: …")
    modes: tuple[str, ...] = ()  # the mode keys the caller's API token is limited to; (): any of the user's


def _optional_str(body: dict, name: str) -> str | None:
    value = body.get(name)
    if value is not None and not isinstance(value, str):
        raise ApiError(400, f"'{name}' must be a string or null.", name)
    return value


EXECUTE_FIELDS = frozenset(
    {
        "conversationId",
        "mode",
        "execution",
        "message",
        "resources",
        "tools",
        "toolResults",
        "approvals",
        "choice",
        "continue",
        "files",
        "projectId",
    }
)


def _attachments_with_a_message(request: ExecuteRequest) -> None:
    """Files and resources go with a message, never with approvals or tool results."""
    for name, given in (("files", request.files), ("resources", request.resources)):
        if given and (request.approvals or request.tool_results):
            raise ApiError(400, f"'{name}' go with a 'message': send them without 'approvals' or 'toolResults'.", name)


def parse_execute_request(raw: bytes) -> ExecuteRequest:
    body = json_body(raw)
    known = EXECUTE_FIELDS
    unknown = sorted(set(body) - known)
    if unknown:
        raise ApiError(400, f"Unknown field '{unknown[0]}'. Known fields: {', '.join(sorted(known))}.", unknown[0])
    request = ExecuteRequest(
        conversation_id=_optional_str(body, "conversationId") or None,
        mode=_optional_str(body, "mode"),
        execution=_optional_str(body, "execution"),
        message=_optional_str(body, "message"),
        project_id=_optional_str(body, "projectId") or None,
    )
    if request.project_id and request.conversation_id:
        raise ApiError(400, ERROR_PROJECT_WITH_CONVERSATION, "projectId")
    if request.execution is not None and request.execution not in Execution.values:
        raise ApiError(400, ERROR_BAD_EXECUTION, "execution")
    request.tools = _parse_tools(body.get("tools"))
    request.tool_results = _parse_tool_results(body.get("toolResults"))
    request.approvals = _parse_approvals(body.get("approvals"))
    request.choice = body.get("choice")
    try:
        request.files = clean_file_ids(body.get("files"))
    except ValidationError as exc:
        raise ApiError.refused(exc) from None
    resume = body.get("continue", False)
    if not isinstance(resume, bool):
        raise ApiError(400, "'continue' must be true or false.", "continue")
    request.resume = resume
    request.resources = body.get("resources")
    if resume and not request.conversation_id:
        raise ApiError(400, "'conversationId' is required with 'continue'.", "conversationId")
    _attachments_with_a_message(request)
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
        if item.get("decision") not in ("approve", "deny", "decline"):  # decline: a "connect" left unconnected
            raise ApiError(
                400, f"'{where}.decision' must be \"approve\", \"deny\" or \"decline\".", f"{where}.decision"
            )
        scope = item.get("scope") or "once"
        if scope not in ("once", "session"):
            raise ApiError(400, f"'{where}.scope' must be \"once\" or \"session\".", f"{where}.scope")
        branch = item.get("branch")
        if branch is not None and not isinstance(branch, bool):
            raise ApiError(400, f"'{where}.branch' must be true, false or null.", f"{where}.branch")
        decisions.append(UserDecision(item["toolCallId"], item["decision"] == "approve", scope, branch))
    return decisions


def prepare_turn(*, user: Any, request: ExecuteRequest) -> Turn:
    """Create (or load) the session and the turn in one transaction: nothing is half-written. The
    services are the workspace's: a new conversation is `session_start`, as the home composer's."""
    if request.approvals:
        return _decided_turn(user=user, request=request)
    if request.tool_results:
        return _pending_turn(user=user, request=request)
    try:
        if request.conversation_id:
            return _next_turn(user=user, request=request, conversation_id=request.conversation_id)
        project = _project(user, request.project_id)
        team = project.team if project is not None else api_team(user)
        if team is None:
            raise ApiError(403, "You are not a member of any team; ask an administrator to add you.")
        mode, execution = _user_defaults(user, team)
        if project is not None and project.default_mode:
            mode = None  # the project's default mode comes before the user's own (session_create)
        # One transaction with the token's check of the mode the defaults chose: a refusal leaves nothing.
        with transaction.atomic():
            session, turn = session_start(
                team=team,
                user=user,
                project=project,
                text=request.message or "",
                mode=request.mode or mode,
                execution=request.execution or execution,
                choice=request.choice,
                files=request.files,
                resources=request.resources,
                origin=request.origin,
            )
            token_allows_mode(request.modes, session.mode, "mode")
        return turn
    except ValidationError as exc:
        raise ApiError.refused(exc) from None


def token_allows_mode(modes: tuple[str, ...], mode: str, field: str) -> None:
    """Nothing when the caller's token may use `mode` (`modes`: its limits, () for none), else a 403
    naming the mode and the ones it may use."""
    if modes and mode not in modes:
        raise ApiError(403, ERROR_TOKEN_MODE.format(mode=mode, modes=", ".join(modes)), field)


def _project(user: Any, project_id: str | None) -> Project | None:
    """The project `projectId` names, one of the user's, or a 404 naming the field (anyone else's
    project is as good as none)."""
    if not project_id:
        return None
    try:
        return project_get(user=user, project_id=project_id)
    except ProjectNotFoundError:
        raise ApiError(404, ERROR_NO_PROJECT, "projectId") from None


def api_team(user: Any) -> Any:
    """The team a new conversation of the token's user belongs to (their first team by name), or None.
    GET /api/v1/modes lists that team's catalog."""
    return team_list_for_user(user=user).first()


def _user_defaults(user: Any, team: Any) -> tuple[str | None, str]:
    """The mode and execution a new conversation starts in when the request names none: the user's
    defaults from Settings, as on the home page (a default mode no longer active, or not for this
    team: none, so the team's default applies, else the catalog's)."""
    preferences = preferences_get(user=user)
    preferred = preferences.default_mode
    return (preferred if preferred and mode_usable(preferred, team) else None), preferences.default_execution or "ask"


def _next_turn(*, user: Any, request: ExecuteRequest, conversation_id: str) -> Turn:
    with transaction.atomic():
        session = _conversation(user=user, conversation_id=conversation_id)
        normalize_turn_mode(session=session, requested_mode=request.mode)
        token_allows_mode(request.modes, session.mode, "conversationId")
        return turn_start(
            session=session,
            text=request.message or "",
            execution=request.execution,
            choice=request.choice,
            resume=request.resume,
            files=request.files,
            resources=request.resources,
        )


def _conversation(*, user: Any, conversation_id: str) -> AgentSession:
    return conversation_get(user=user, conversation_id=conversation_id)


def _pending_turn(*, user: Any, request: ExecuteRequest) -> Turn:
    session = _conversation(user=user, conversation_id=request.conversation_id or "")
    turn = turn_last(session=session)
    if turn is None or turn.status != Status.REQUIRES_ACTION:
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


def _decided_turn(*, user: Any, request: ExecuteRequest) -> Turn:
    session = _conversation(user=user, conversation_id=request.conversation_id or "")
    turn = turn_last(session=session)
    if turn is None or turn.status != Status.AWAITING_APPROVAL:
        raise ApiError(409, "This conversation is not waiting for approvals.", "approvals")
    try:
        approval_decide(turn=turn, decisions=request.approvals, user=user, complete=True)
    except ValidationError as exc:
        raise ApiError.refused(exc, statuses={CODE_STALE: 409}, default_field="approvals") from None
    return turn


def execute_response(turn: Turn) -> dict[str, Any]:
    state = turn_state(turn)
    changes = state.mode_changes if state is not None else []
    pending = state.pending if isinstance(state, PausedState) else []
    branch = branch_of(changes)
    return {
        "conversationId": turn.session_id,
        "turnId": turn.id,
        "mode": turn.response_mode or turn.mode,
        "modeVersion": (turn.trace or {}).get("mode_version"),  # the version the turn ran with
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
                **({"server": c["server"], "connectUrl": connect_url(c["server"])} if c["kind"] == "connect" else {}),
                **question_fields(dict(c)),
            }
            for c in (state.awaiting if isinstance(state, PausedState) else [])
        ],
        "modeChanges": [
            {"previousMode": c["previousMode"], "newMode": c["newMode"], "reason": c["reason"], "branch": c["branch"]}
            for c in changes
        ],
        "usage": {"promptTokens": turn.prompt_tokens, "completionTokens": turn.completion_tokens},
        "model": turn.model_label or get_llm_client().label,
        "followUp": None,  # agent_execute: the turn that carried the request on after a consented switch
    }


@csrf_exempt
async def agent_execute(request: HttpRequest) -> JsonResponse:
    try:
        user = await authenticate(request)  # auth before anything else
        if request.method != "POST":
            raise ApiError(405, "Use POST.")
        answer = answer_of(request.body)  # an MCP server's question (api_answers.py)
        if answer is not None and (answered := await answer_question(user, answer)) is not None:
            return JsonResponse(execute_response(answered))
        parsed = replace(parse_execute_request(request.body), modes=token_modes(request))
        new_turn = not (parsed.approvals or parsed.tool_results)  # counted against the user's turn rate
        if new_turn and (limited := await sync_to_async(rate_limit)(TURNS, user_key(user), request)):
            raise ApiError.too_many(limited)
        turn, follow_up = await execute_turn(user=user, request=parsed)
    except ApiError as exc:
        return exc.response()
    body = execute_response(turn)
    if follow_up is not None:
        body["followUp"] = execute_response(follow_up)
    return JsonResponse(body)


async def execute_turn(*, user: Any, request: ExecuteRequest) -> tuple[Turn, Turn | None]:
    """Record the request's turn (prepare_turn), run it and wait for its end or its pause; with it the
    turn that carried the request on after a consented switch, if any. The JSON API runs a program's
    turn here (the MCP server and the A2A agent, interop/, run its two halves with the turn followed in
    between); an ApiError says what was refused."""
    return await finish_turn(await submit_turn(user=user, request=request))


async def submit_turn(*, user: Any, request: ExecuteRequest) -> Submitted:
    """execute_turn's first half: the request's turn recorded and dispatched, not waited for (the A2A
    agent answers a task at once, or streams it; the MCP server follows it for progress and a cancel:
    interop/)."""
    submitted = await turn_submit(
        partial(prepare_turn, user=user, request=request),
        client_tools=request.tools,
        tool_results=request.tool_results or None,
    )
    assert submitted is not None  # prepare_turn always returns a turn (or raises ApiError)
    return submitted


async def finish_turn(submitted: Submitted) -> tuple[Turn, Turn | None]:
    """execute_turn's second half: wait for the submitted turn's end or pause, then for the turn that
    carried its request on after a consented switch, if any."""
    turn = await get_runner().wait(submitted.turn.id, submitted.started, session_id=submitted.turn.session_id)
    follow_up = await _follow_up(turn) if switch_continues(turn) else None
    return turn, follow_up


async def _follow_up(turn: Turn) -> Turn | None:
    """After a consented switch in this conversation, the turn that carried the request on in the new
    mode, run to its end (or its pause) like the request's own: made here if the process that ran
    the switch has not made it yet (without the client's tools either way, as the page's)."""
    submitted = await turn_submit(partial(turn_continue_after_switch, turn_id=turn.id))
    follow_up = submitted.turn if submitted else await turn_continued_aget(turn=turn)
    if follow_up is None:
        return None
    return await get_runner().wait(
        follow_up.id, submitted.started if submitted else None, session_id=follow_up.session_id
    )


@csrf_exempt
async def turn_cancel_api(request: HttpRequest, turn_id: str) -> JsonResponse:
    try:
        user = await authenticate(request)
        if request.method != "POST":
            raise ApiError(405, "Use POST.")
        turn = await turn_of_user_aget(user=user, turn_id=turn_id)
        if turn is None:
            raise await sync_to_async(no_turn)(user=user, turn_id=turn_id)
        cancelled = await turn_cancel(turn=turn)
    except ApiError as exc:
        return exc.response()
    return JsonResponse({"turnId": turn_id, "cancelRequested": cancelled}, status=202 if cancelled else 200)
