"""The JSON API's side of an MCP server's question (agents/elicitations.py): how a paused turn lists
it in `approvals`, and the answer `{"conversationId", "approvals": [{"toolCallId", "decision":
"accept"|"decline"|"cancel", "content": {…}}]}`, after which the request follows the run on to its
end or its next pause, as after approvals."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from asgiref.sync import sync_to_async
from django.core.exceptions import ValidationError

from agents.approvals import CODE_STALE
from agents.elicitations import elicitation_answer_to_resume, events_last_seq, question_closed, turn_after_answer
from agents.selectors import turn_last
from agents.submit import turn_submit
from agents.turns import Status
from tools.mcp import ACTIONS

from .api_support import ApiError, conversation_get, json_body

if TYPE_CHECKING:
    from agents.models import Turn


def answer_of(raw: bytes) -> tuple[str, str, str, Any] | None:
    """(conversationId, toolCallId, decision, content) when the body answers a question, else None
    (the body is then an ordinary request, parsed as such)."""
    try:
        body = json_body(raw)
    except ApiError:
        return None
    approvals = body.get("approvals")
    if not (isinstance(approvals, list) and approvals and isinstance(approvals[0], dict)):
        return None
    if approvals[0].get("decision") not in ACTIONS:
        return None
    if len(approvals) != 1:
        raise ApiError(400, "Answer one question per request.", "approvals")
    item = approvals[0]
    if set(body) - {"conversationId", "approvals"}:
        raise ApiError(400, "An answer carries only 'conversationId' and 'approvals'.", "approvals")
    conversation, call = body.get("conversationId"), item.get("toolCallId")
    if not isinstance(conversation, str) or not conversation:
        raise ApiError(400, "'conversationId' is required with 'approvals'.", "conversationId")
    if not isinstance(call, str) or not call:
        raise ApiError(400, "'approvals[0].toolCallId' must be a non-empty string.", "approvals[0].toolCallId")
    content = item.get("content")
    if content is not None and not isinstance(content, dict):
        raise ApiError(400, "'approvals[0].content' must be an object.", "approvals[0].content")
    return conversation, call, item["decision"], content


class NotAQuestion(Exception):
    """The answer's "decline" is for another kind of pending item (a connect card): the ordinary
    approvals path takes the request."""


def _record(user: Any, conversation: str, call: str, decision: str, content: Any) -> tuple[Turn, int, bool]:
    session = conversation_get(user=user, conversation_id=conversation)
    turn = turn_last(session=session)
    if turn is not None and (closed := question_closed(turn, call)):
        raise ApiError(409, closed, "approvals[0].toolCallId")
    if turn is None or turn.status != Status.AWAITING_APPROVAL:
        raise ApiError(409, "This conversation is not waiting for approvals.", "approvals")
    awaiting = (turn.state or {}).get("awaiting") or []
    if decision == "decline" and not any(a.get("id") == call and a.get("kind") == "elicitation" for a in awaiting):
        raise NotAQuestion
    try:
        resumed = elicitation_answer_to_resume(turn=turn, item_id=call, action=decision, content=content, user=user)
    except ValidationError as exc:
        fields = {name: f"approvals[0].{name}" for name in ("toolCallId", "decision", "content")}
        raise ApiError.refused(
            exc, statuses={CODE_STALE: 409, "owner": 403}, fields=fields, default_field="approvals"
        ) from None
    return turn, events_last_seq(turn.pk), resumed is not None


async def answer_question(user: Any, answer: tuple[str, str, str, Any]) -> Turn | None:
    """The turn once the question's answer took it on; None when the answer is not for a question."""
    try:
        turn, seq, resume = await sync_to_async(_record)(user, *answer)
    except NotAQuestion:
        return None
    if resume:  # a question no run holds: a new run sends the paused call again with the answer
        await turn_submit(lambda: turn)
    return await turn_after_answer(turn.pk, seq)


def question_fields(item: dict[str, Any]) -> dict[str, Any]:
    """What an `approvals` entry of kind "elicitation" adds: the message and the schema (or the url)."""
    if item.get("kind") != "elicitation":
        return {}
    extra: dict[str, Any] = {"message": item.get("message", ""), "server": item.get("server", "")}
    if item.get("mode") == "url":
        extra["url"] = item.get("url", "")
    else:
        extra["schema"] = item.get("schema") or {}
    return extra
