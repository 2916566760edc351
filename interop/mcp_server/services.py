"""What the MCP server's handlers read and run for the token's user, through the agents' services:
the modes they may use (their team's catalog, as GET /api/v1/modes), their own conversations and a
turn run as the JSON API runs one (agents/web/api.py `submit_turn` then `finish_turn`, the halves of
`execute_turn`: calls.py follows the turn in between)."""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from asgiref.sync import sync_to_async
from django.conf import settings
from django.core.files.storage import default_storage
from django.urls import reverse

from agents.documents.services import document_owned, document_version, documents_of_sessions
from agents.elicitations import events_last_seq, turn_after_answer
from agents.selectors import session_list_own, turn_last
from agents.state import PausedState, turn_state
from agents.turns import Status
from agents.web.api import ExecuteRequest, finish_turn, submit_turn
from agents.web.api_answers import answer_question
from agents.web.api_modes import api_modes
from agents.web.api_support import ApiError, conversation_get
from agents.web.views.export import session_export_data, session_export_markdown
from aptix.bearer import token_modes
from aptix.ratelimits import TURNS, rate_limit, user_key
from tools.media import IMAGE_PATH, IMAGE_TYPES

from . import approvals

if TYPE_CHECKING:
    from django.http import HttpRequest

    from agents.models import AgentSession, Document, Turn
    from agents.submit import Submitted
    from modes.models import AgentMode

TOOL_PREFIX = "ask_"
CONVERSATION_URI = "aptix://conversations/"
DOCUMENT_URI = "aptix://documents/"
DOCUMENTS_MAX = 200  # the most recently changed documents listed as resources
ERROR_NO_DOCUMENT = "No document with this id."
CONVERSATIONS_MAX = 200  # the most recently active conversations listed as resources (as the API's list)
ERROR_NO_CONVERSATION = "No conversation with this id."
ERROR_NOT_WAITING = "This conversation is not waiting for anything: call the tool again."
SITE_LINK = re.compile(r"\]\((/[^)\s]+)\)")  # a Markdown link or image to a path of this site
IMAGES_MAX = 4  # images of an answer sent along as image content (the rest stay links)
# Statuses a turn ends in without an answer: the call's result is an error naming the turn's.
FAILED = frozenset({Status.FAILED, Status.CANCELLED, Status.LIMIT_REACHED})


def user_modes(*, user: Any, limited_to: tuple[str, ...] = ()) -> list[AgentMode]:
    """The active modes the user may use in the team a new conversation of theirs belongs to (the
    JSON API's team; none without a team), within their token's mode limits."""
    return api_modes(user=user, limited_to=limited_to)


def tool_name(mode: AgentMode) -> str:
    return f"{TOOL_PREFIX}{mode.key}"


def mode_of_tool(*, user: Any, name: str, limited_to: tuple[str, ...] = ()) -> AgentMode | None:
    """The user's mode a tool name asks, or None (an unknown name, or a mode they, or their token, may
    not use)."""
    if not name.startswith(TOOL_PREFIX):
        return None
    return next((mode for mode in user_modes(user=user, limited_to=limited_to) if tool_name(mode) == name), None)


def user_conversations(*, user: Any, limited_to: tuple[str, ...] = ()) -> list[AgentSession]:
    """The user's own conversations (never shared ones or anyone else's), the most recent first; with a
    token limited to chosen modes, only those in one of them."""
    sessions = session_list_own(user=user, limit=CONVERSATIONS_MAX)
    return [session for session in sessions if not limited_to or session.mode in limited_to]


def conversation_uri(session: AgentSession) -> str:
    return f"{CONVERSATION_URI}{session.id}"


def conversation_markdown(*, user: Any, uri: str, base_url: str, limited_to: tuple[str, ...] = ()) -> str:
    """The user's conversation at `uri` as the Markdown export; any other id (another user's, a
    shared one, a made-up one, one in a mode the token may not use) raises ApiError("No conversation
    with this id.")."""
    if not uri.startswith(CONVERSATION_URI):
        raise ApiError(404, ERROR_NO_CONVERSATION)
    try:
        session = conversation_get(user=user, conversation_id=uri.removeprefix(CONVERSATION_URI))
    except ApiError:
        raise ApiError(404, ERROR_NO_CONVERSATION) from None  # a teammate's shared one too: only one's own
    if limited_to and session.mode not in limited_to:
        raise ApiError(404, ERROR_NO_CONVERSATION)
    return session_export_markdown(session_export_data(session, lambda path: base_url + path))


def document_uri(document: Document) -> str:
    return f"{DOCUMENT_URI}{document.id}"


def user_documents(*, user: Any, limited_to: tuple[str, ...] = ()) -> list[Document]:
    """The documents (drafts the agent or the user keeps beside a conversation: a DDR, a workflow) of
    the user's own conversations listed as resources, the most recently changed first."""
    sessions = user_conversations(user=user, limited_to=limited_to)
    return documents_of_sessions(session_ids=[session.id for session in sessions])[:DOCUMENTS_MAX]


def document_markdown(*, user: Any, uri: str, limited_to: tuple[str, ...] = ()) -> str:
    """The current version of the user's document at `uri`, as Markdown; a document of anyone else's
    conversation (a shared one included), of a mode the token may not use, or a made-up id raises
    ApiError("No document with this id.")."""
    document = document_owned(document_id=uri.removeprefix(DOCUMENT_URI)) if uri.startswith(DOCUMENT_URI) else None
    if document is None:
        raise ApiError(404, ERROR_NO_DOCUMENT)
    try:
        session = conversation_get(user=user, conversation_id=document.session_id)
    except ApiError:
        raise ApiError(404, ERROR_NO_DOCUMENT) from None
    if session.user_id != user.pk or (limited_to and session.mode not in limited_to):
        raise ApiError(404, ERROR_NO_DOCUMENT)  # a teammate's shared conversation's too: only one's own
    return document_version(session_id=session.id, document_id=document.id).content


def origin_label(client_name: str | None) -> str:
    """The sidebar's label of a conversation begun over MCP: the client's name when it gave one."""
    name = " ".join((client_name or "").split())
    return f"via MCP: {name}" if name else "via MCP"


def base_url(request: HttpRequest) -> str:
    """Where the site is for links: APTIX_PUBLIC_URL when set, else the request's own origin."""
    return settings.APTIX_PUBLIC_URL or f"{request.scheme}://{request.get_host()}"


@dataclass(frozen=True)
class Answer:
    """A turn's outcome as a tool result: its text, whether it is an error, and its ids and status."""

    text: str
    is_error: bool
    structured: dict[str, Any]
    images: list[tuple[bytes, str]] = field(default_factory=list, kw_only=True)  # (bytes, MIME type) each
    awaiting: list[dict[str, Any]] = field(default_factory=list, kw_only=True)  # the calls a paused turn waits on
    # The signed requestState with which the client's answers to those calls continue (approvals.py).
    state: str | None = field(default=None, kw_only=True)


async def submit(
    *,
    user: Any,
    mode: AgentMode,
    message: str,
    conversation_id: str | None,
    execution: str | None,
    request: HttpRequest,
    origin: str = "",
) -> Submitted:
    """Record and dispatch one turn of the user in `mode` (a new conversation) or in their
    conversation `conversation_id` (which keeps its own mode, as on the API), within the user's turn
    rate; a new conversation is labelled with `origin`. Refusals raise ApiError with the API's
    message. `finish` waits for it (agents/web/api.py's submit_turn and finish_turn, as
    `execute_turn` runs a turn of the JSON API)."""
    if limited := await sync_to_async(rate_limit)(TURNS, user_key(user), request):
        raise ApiError.too_many(limited)
    parsed = ExecuteRequest(
        conversation_id=conversation_id or None,
        mode=mode.key,
        execution=execution or mode.execution or None,
        message=message,
        origin=origin,
        modes=token_modes(request),
    )
    return await submit_turn(user=user, request=parsed)


async def finish(submitted: Submitted) -> list[Turn]:
    """Wait for the submitted turn's end or pause (and the turn that carried it on after a consented
    switch): the chain from the submitted turn (interop/progress.py's `follow_run` takes this)."""
    turn, follow_up = await finish_turn(submitted)
    return [turn] if follow_up is None else [turn, follow_up]


async def _finish_last(submitted: Submitted) -> Turn:
    return (await finish(submitted))[-1]


async def answer_of(*, user: Any, turn: Turn, request: HttpRequest) -> Answer:
    """The ended (or paused) turn as the call's answer."""
    return await sync_to_async(_answer)(user, turn, base_url(request))


async def decide(
    *,
    user: Any,
    state: str,
    responses: dict[str, Any],
    request: HttpRequest,
    follow: Callable[[Submitted], Awaitable[Turn]] = _finish_last,
) -> Answer:
    """Continue the turn a `requestState` names with the client's elicitation answers (approvals.py):
    an MCP server's question answered as the JSON API answers it, the approvals decided as its
    `approvals`; then wait for the turn again (its end or its next pause). A turn the decisions
    dispatch again is waited for by `follow` (calls.py: progress and a cancel meanwhile)."""
    conversation_id = approvals.conversation_of_state(user=user, state=state)
    awaiting = await sync_to_async(_awaiting_calls)(user=user, conversation_id=conversation_id)
    turn: Turn | None = None
    for call in awaiting:
        if call["kind"] == approvals.QUESTION:
            action, content = approvals.answer_of(responses.get(call["id"]))
            turn = await answer_question(user, (conversation_id, call["id"], action, content))
    decisions = approvals.decisions_of(responses, awaiting)
    if decisions and (turn is None or turn.status == Status.AWAITING_APPROVAL):
        parsed = ExecuteRequest(
            conversation_id=conversation_id, mode=None, execution=None, message=None, approvals=decisions
        )
        turn = await follow(await submit_turn(user=user, request=parsed))
    if turn is None:  # connections the user says they made: the turn goes on once they really did
        turn = await _after_connecting(user=user, conversation_id=conversation_id)
    return await sync_to_async(_answer)(user, turn, base_url(request))


async def _after_connecting(*, user: Any, conversation_id: str) -> Turn:
    """The conversation's last turn: still waiting when the connection was not made (asked again), else
    at its end or its next pause (connecting resumed it: agents.approvals.connect_answered)."""
    session = await sync_to_async(conversation_get)(user=user, conversation_id=conversation_id)
    turn = await sync_to_async(turn_last)(session=session)
    if turn is None:
        raise ApiError(409, ERROR_NOT_WAITING)
    if turn.status == Status.AWAITING_APPROVAL or turn.is_finished:
        return turn
    return await turn_after_answer(turn.pk, await sync_to_async(events_last_seq)(turn.pk))


def _awaiting_calls(*, user: Any, conversation_id: str) -> list[dict[str, Any]]:
    session = conversation_get(user=user, conversation_id=conversation_id)
    turn = turn_last(session=session)
    return _awaiting(turn) if turn is not None else []


def _awaiting(turn: Turn) -> list[dict[str, Any]]:
    state = turn_state(turn)
    return [dict(call) for call in state.awaiting] if isinstance(state, PausedState) else []


def _answer(user: Any, turn: Turn, site: str) -> Answer:
    structured = {"conversationId": turn.session_id, "turnId": turn.id, "status": turn.status}
    if turn.status in FAILED:
        return Answer(turn.error or f"The turn ended {turn.status}.", True, structured)
    if turn.status == Status.AWAITING_APPROVAL:
        awaiting = _awaiting(turn)
        state = approvals.state_for(user=user, conversation_id=turn.session_id, turn_id=turn.id)
        return Answer(_waiting(turn, awaiting, site), False, structured, awaiting=awaiting, state=state)
    return Answer(_absolute(turn.answer or "", site), False, structured, images=_images(turn))


def _absolute(text: str, site: str) -> str:
    """The answer's links to this site's paths (its images, downloads, sessions) made absolute: the
    client is not on the site."""
    return SITE_LINK.sub(lambda match: f"]({site}{match.group(1)})", text)


def _images(turn: Turn) -> list[tuple[bytes, str]]:
    """The images the answer shows that were made in its own session (generated charts, MCP results'
    images), read from the media storage: a link to another session's is never read."""
    prefix = "/" + settings.MEDIA_URL.strip("/") + "/"
    images = []
    for match in SITE_LINK.finditer(turn.answer or ""):
        path = match.group(1).removeprefix(prefix)
        image = IMAGE_PATH.fullmatch(path) if match.group(1).startswith(prefix) else None
        if image is None or image.group(1) != turn.session_id or not default_storage.exists(path):
            continue
        with default_storage.open(path) as data:
            images.append((data.read(), IMAGE_TYPES[image.group(2)]))
        if len(images) == IMAGES_MAX:
            break
    return images


def _waiting(turn: Turn, awaiting: list[dict[str, Any]], site: str) -> str:
    """What a paused turn waits for, and where to decide it: the session in the browser."""
    approvals_of = [f"`{call['name']}`" for call in awaiting if call["kind"] in approvals.ASKED_KINDS]
    waits = [f"your approval of {', '.join(approvals_of)}"] if approvals_of else []
    for call in awaiting:
        server = call.get("server") or "an MCP server"
        if call["kind"] == approvals.QUESTION:
            waits.append(f"your answer to the MCP server {server}: \"{call.get('message', '')}\"")
        elif call["kind"] == approvals.CONNECT:
            waits.append(f"you to connect {server}")
    link = site + reverse("session-detail", args=[turn.session_id])
    return f"The turn waits for {' and '.join(waits) or 'a decision'}. Decide in the browser: {link}"
