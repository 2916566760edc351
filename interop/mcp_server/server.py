"""The low-level MCP server (mcp.server.lowlevel.Server): what it offers depends on who asks, so
every handler reads the token's user that mount.py put in the HTTP request's scope.

- tools: `ask_<key>` for each mode the user may use; a call runs a turn and answers with its text
  and `structuredContent` {"conversationId", "turnId", "status"}; a failed turn is `isError`; a turn
  waiting for approval asks the client with elicitation forms when it can take them (approvals.py),
  else says what waits and links the session. While the turn runs, a call that asked for progress
  gets its steps and tool calls as progress notifications, and a cancelled call stops the turn (calls.py).
- resources: the user's own conversations, `aptix://conversations/<id>`, and the documents kept beside
  them, `aptix://documents/<id>` (the current version), read as Markdown.
- prompts: one per mode, named as its tool, whose messages are the mode's example utterances.
"""

from __future__ import annotations

import base64
import functools
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import mcp_types as types
from asgiref.sync import sync_to_async
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.shared.exceptions import MCPError
from mcp.shared.message import ServerMessageMetadata
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from agents.models import Execution
from agents.web.api_support import ApiError
from aptix.bearer import token_modes

from ..requests import served_as_a_request
from . import approvals, calls, services

if TYPE_CHECKING:
    from agents.models import Turn
    from agents.submit import Submitted

SCOPE_USER = "aptix.user"  # the token's user, set by mount.py before the SDK sees the request
SCOPE_REQUEST = "aptix.request"  # the Django request over the same scope (rate limits, the site's origin)
SCOPE_CALLER = "aptix.caller"  # which credential the request came with (calls.caller_of): a call's cancel names it

ERROR_UNKNOWN_TOOL = "Unknown tool {name!r}: list the tools to see the modes you may use."
ERROR_MESSAGE = "'message' is required (a non-empty string)."
ERROR_CONVERSATION_ID = "'conversationId' must be a string."
ERROR_EXECUTION = "'execution' must be \"ask\" or \"agent\"."
ERROR_CANCELLED = "This call was cancelled before it began: no turn was started."

INPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "message": {"type": "string", "description": "What to ask, as you would type it in Aptix."},
        "conversationId": {
            "type": "string",
            "description": "Continue this conversation of yours (it keeps its own mode); omit to start a new one.",
        },
        "execution": {
            "type": "string",
            "enum": list(Execution.values),
            "description": "ask: one model call; agent: a multi-step loop with the mode's tools. "
            "Default: the mode's, else your own default.",
        },
    },
    "required": ["message"],
    "additionalProperties": False,
}
OUTPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "conversationId": {"type": "string"},
        "turnId": {"type": "string"},
        "status": {"type": "string"},
    },
    "required": ["conversationId", "turnId", "status"],
}


def _scope(ctx: ServerRequestContext[Any]) -> dict[str, Any]:
    request = ctx.request
    scope = getattr(request, "scope", None)
    if not isinstance(scope, dict) or SCOPE_USER not in scope:
        # mount.py authenticates every request before the SDK sees it: without a user, nothing is served.
        raise RuntimeError("The MCP server is served through interop.mcp_server.McpMount only.")
    return scope


def _user(ctx: ServerRequestContext[Any]) -> Any:
    return _scope(ctx)[SCOPE_USER]


def _modes(ctx: ServerRequestContext[Any]) -> tuple[str, ...]:
    """The mode keys the request's API token is limited to; () for none."""
    return token_modes(_scope(ctx)[SCOPE_REQUEST])


def _client_name(ctx: ServerRequestContext[Any]) -> str | None:
    """The client's name from its clientInfo: each request carries it on 2026-07-28; on the
    handshake-era protocol only `initialize` does, a request of its own when stateless (mount.py)."""
    params = ctx.session.client_params
    info = params.client_info if params is not None else None
    return (info.title or info.name) if info is not None else None


def _error(message: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=message)], is_error=True)


async def list_tools(
    ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
) -> types.ListToolsResult:
    modes = await sync_to_async(services.user_modes)(user=_user(ctx), limited_to=_modes(ctx))
    return types.ListToolsResult(
        tools=[
            types.Tool(
                name=services.tool_name(mode),
                title=f"Ask {mode.display_name}",
                description=f"Ask Aptix's {mode.display_name} mode. {mode.description}".strip(),
                input_schema=INPUT_SCHEMA,
                output_schema=OUTPUT_SCHEMA,
            )
            for mode in modes
        ]
    )


def _arguments(arguments: dict[str, Any]) -> tuple[str, str | None, str | None]:
    """The call's message, conversationId and execution, or an ApiError naming what is wrong."""
    message, conversation_id, execution = (arguments.get(k) for k in ("message", "conversationId", "execution"))
    if not isinstance(message, str) or not message.strip():
        raise ApiError(400, ERROR_MESSAGE, "message")
    if conversation_id is not None and not isinstance(conversation_id, str):
        raise ApiError(400, ERROR_CONVERSATION_ID, "conversationId")
    if execution is not None and execution not in Execution.values:
        raise ApiError(400, ERROR_EXECUTION, "execution")
    return message, conversation_id, execution


async def call_tool(
    ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
) -> types.CallToolResult | types.InputRequiredResult:
    scope = _scope(ctx)
    user = scope[SCOPE_USER]
    mode = await sync_to_async(services.mode_of_tool)(user=user, name=params.name, limited_to=_modes(ctx))
    if mode is None:
        return _error(ERROR_UNKNOWN_TOOL.format(name=params.name))
    caller = scope[SCOPE_CALLER]
    if await calls.cancelled_before(ctx, user=user, caller=caller):
        return _error(ERROR_CANCELLED)

    async def follow(submitted: Submitted) -> Turn:  # for progress and a cancel meanwhile (calls.py)
        return await calls.follow(ctx, user=user, caller=caller, submitted=submitted)

    try:
        if params.request_state is not None:  # the client's answers to the approvals this server asked
            answer = await services.decide(
                user=user,
                state=params.request_state,
                responses=dict(params.input_responses or {}),
                request=scope[SCOPE_REQUEST],
                follow=follow,
            )
            return _result(ctx, answer)
        message, conversation_id, execution = _arguments(params.arguments or {})
        submitted = await services.submit(
            user=user,
            mode=mode,
            message=message,
            conversation_id=conversation_id,
            execution=execution,
            request=scope[SCOPE_REQUEST],
            origin=services.origin_label(_client_name(ctx)),
        )
        answer = await services.answer_of(user=user, turn=await follow(submitted), request=scope[SCOPE_REQUEST])
        answer = await _asked_in_call(ctx, answer, follow)
    except ApiError as exc:
        return _error(exc.message)
    return _result(ctx, answer)


async def _asked_in_call(
    ctx: ServerRequestContext[Any], answer: services.Answer, follow: Callable[[Submitted], Awaitable[Turn]]
) -> services.Answer:
    """On the handshake-era protocol, in a session that can send its client requests mid-call (mount.py
    gives a client that declares elicitation one): each waiting call asked with `elicitation/create`
    on the call's own stream, the answers decided as the 2026-07-28 round trip's, and the turn followed
    on (by `follow`: progress and a cancel meanwhile) until it ends or waits for what this client cannot
    be asked (then: the link)."""
    capabilities = ctx.session.client_capabilities
    elicitation = capabilities.elicitation if capabilities is not None else None
    if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS or elicitation is None or not ctx.session.can_send_request:
        return answer
    scope = _scope(ctx)
    site = services.base_url(scope[SCOPE_REQUEST])
    while answer.state:
        asked = approvals.requests_for(answer.awaiting, site=site, urls=elicitation.url is not None)
        if asked is None:
            break
        metadata = ServerMessageMetadata(related_request_id=ctx.request_id)
        responses = {
            call_id: await ctx.session.send_request(request, types.ElicitResult, metadata=metadata)
            for call_id, request in asked.items()
        }
        answer = await services.decide(
            user=scope[SCOPE_USER],
            state=answer.state,
            responses=responses,
            request=scope[SCOPE_REQUEST],
            follow=follow,
        )
    return answer


def _elicitation(ctx: ServerRequestContext[Any]) -> types.ElicitationCapability | None:
    """What a client takes within a call: elicitation on the 2026-07-28 protocol's multi-round-trip
    requests (stateless, a handshake-era call has no way back to its client), else nothing."""
    capabilities = ctx.session.client_capabilities
    elicitation = capabilities.elicitation if capabilities is not None else None
    return elicitation if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS else None


def _result(
    ctx: ServerRequestContext[Any], answer: services.Answer
) -> types.CallToolResult | types.InputRequiredResult:
    """The turn's answer; a turn waiting for what the client can ask its user: the elicitations."""
    elicitation = _elicitation(ctx)
    if answer.state and elicitation is not None:
        site = services.base_url(_scope(ctx)[SCOPE_REQUEST])
        asked = approvals.requests_for(answer.awaiting, site=site, urls=elicitation.url is not None)
        if asked is not None:
            return types.InputRequiredResult(input_requests=dict(asked), request_state=answer.state)
    images = [
        types.ImageContent(type="image", data=base64.b64encode(data).decode(), mime_type=mime)
        for data, mime in answer.images
    ]
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=answer.text), *images],
        structured_content=answer.structured,
        is_error=answer.is_error,
    )


async def list_resources(
    ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
) -> types.ListResourcesResult:
    sessions = await sync_to_async(services.user_conversations)(user=_user(ctx), limited_to=_modes(ctx))
    documents = await sync_to_async(services.user_documents)(user=_user(ctx), limited_to=_modes(ctx))
    conversations = [
        types.Resource(
            name=session.id,
            title=str(session),
            uri=services.conversation_uri(session),
            description=f"Conversation in mode {session.mode}, last active {session.updated_at:%Y-%m-%d %H:%M} UTC",
            mime_type="text/markdown",
        )
        for session in sessions
    ]
    drafts = [
        types.Resource(
            name=document.id,
            title=document.title,
            uri=services.document_uri(document),
            description=f"Document, version {document.version}, changed {document.updated_at:%Y-%m-%d %H:%M} UTC "
            f"(conversation {document.session_id})",
            mime_type="text/markdown",
        )
        for document in documents
    ]
    return types.ListResourcesResult(resources=[*conversations, *drafts])


async def read_resource(
    ctx: ServerRequestContext[Any], params: types.ReadResourceRequestParams
) -> types.ReadResourceResult:
    scope = _scope(ctx)
    uri = str(params.uri)
    try:
        if uri.startswith(services.DOCUMENT_URI):
            text = await sync_to_async(services.document_markdown)(
                user=scope[SCOPE_USER], uri=uri, limited_to=_modes(ctx)
            )
        else:
            text = await sync_to_async(services.conversation_markdown)(
                user=scope[SCOPE_USER],
                uri=uri,
                base_url=services.base_url(scope[SCOPE_REQUEST]),
                limited_to=_modes(ctx),
            )
    except ApiError as exc:
        # A JSON-RPC error, as the spec's "resource not found" (-32002), naming no one's conversation.
        raise MCPError(code=-32002, message=exc.message, data={"uri": uri}) from None
    return types.ReadResourceResult(
        contents=[types.TextResourceContents(uri=uri, mime_type="text/markdown", text=text)]
    )


async def list_prompts(
    ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
) -> types.ListPromptsResult:
    modes = await sync_to_async(services.user_modes)(user=_user(ctx), limited_to=_modes(ctx))
    return types.ListPromptsResult(
        prompts=[
            types.Prompt(
                name=services.tool_name(mode),
                title=f"{mode.display_name}: examples",
                description=f"What people ask the {mode.display_name} mode.",
            )
            for mode in modes
            if mode.example_utterances
        ]
    )


async def get_prompt(ctx: ServerRequestContext[Any], params: types.GetPromptRequestParams) -> types.GetPromptResult:
    mode = await sync_to_async(services.mode_of_tool)(user=_user(ctx), name=params.name, limited_to=_modes(ctx))
    if mode is None or not mode.example_utterances:
        raise MCPError(code=-32602, message=f"Unknown prompt {params.name!r}.")
    return types.GetPromptResult(
        description=f"Example requests for the {mode.display_name} mode (call {services.tool_name(mode)}).",
        messages=[
            types.PromptMessage(role="user", content=types.TextContent(type="text", text=str(utterance)))
            for utterance in mode.example_utterances
        ],
    )


def _as_a_request(handler: Callable[..., Awaitable[Any]]) -> Callable[..., Awaitable[Any]]:
    """Each call served as Django serves a request: its sync work on a thread of its own, whose
    database connection goes back to the pool when the call ends (a thread that outlived its call kept
    its pooled connection: a process would run out of them)."""

    @functools.wraps(handler)
    async def serve(ctx: Any, params: Any) -> Any:
        async with served_as_a_request():
            return await handler(ctx, params)

    return serve


def build_server() -> Server[Any]:
    return Server(
        "aptix",
        title="Aptix",
        instructions=(
            "Ask the team's Aptix modes (tools ask_<mode>); read your conversations and documents as resources."
        ),
        on_list_tools=_as_a_request(list_tools),
        on_call_tool=_as_a_request(call_tool),
        on_list_resources=_as_a_request(list_resources),
        on_read_resource=_as_a_request(read_resource),
        on_list_prompts=_as_a_request(list_prompts),
        on_get_prompt=_as_a_request(get_prompt),
    )
