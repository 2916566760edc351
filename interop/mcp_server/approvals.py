"""A turn waiting for the user, asked back through the calling client (the 2026-07-28 protocol's
multi-round-trip requests: the tool call answers `InputRequiredResult` with an elicitation per waiting
call, and the client calls again with the answers and the opaque `requestState`).

What is asked, per kind of waiting call:
- a tool call or a mode change (the mode's approval policy): a form, approve or deny;
- an MCP server's own question (agents/elicitations.py): the server's form, with its schema, or its
  link (URL mode, when the client takes URL elicitations), passed on as it was asked;
- a connection to make (a per-user server the user has not connected): the link to connect it (URL
  mode); accepting says "I connected", declining leaves the server unconnected, as in the browser.

Stateless as the rest of the server: the state is the conversation and turn, signed for the user, so
any process can take the answers; approvals are then decided as the JSON API's `approvals`
(agents/web/api.py prepare_turn, approval_decide) and questions answered as its answers
(agents/web/api_answers.py), which check again that the turn is the user's and still waiting. What the
client cannot be asked (a link for a client without URL elicitation) waits for the browser: the result
says so and links the session."""

from __future__ import annotations

import json
from typing import Any

import mcp_types as types
from django.core import signing

from agents.approvals import UserDecision
from agents.web.api_support import ApiError
from agents.web.connections import connect_url

ASKED_KINDS = frozenset({"tool", "mode_change"})  # decided by an approve/deny form
QUESTION = "elicitation"  # an MCP server's own question
CONNECT = "connect"  # a per-user server to connect
EMPTY_FORM: dict[str, Any] = {"type": "object", "properties": {}}
SALT = "aptix.mcp.approvals"
MAX_AGE = 24 * 3600  # seconds an elicitation's answer may take (a turn's approvals wait as long as the user)
ERROR_STATE = "This approval's state is not valid (or too old): call the tool again."
DECISION_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "decision": {"type": "string", "enum": ["approve", "deny"], "title": "Approve or deny"},
    },
    "required": ["decision"],
}


def requests_for(awaiting: list[dict[str, Any]], *, site: str, urls: bool) -> dict[str, types.ElicitRequest] | None:
    """The elicitation asking each waiting call, by its id; None when one of them cannot be asked of
    this client (a link, and `urls` false: the client takes no URL elicitation)."""
    asked = {call["id"]: _request(call, site=site, urls=urls) for call in awaiting}
    if not asked or any(request is None for request in asked.values()):
        return None
    return {call_id: request for call_id, request in asked.items() if request is not None}


def _request(call: dict[str, Any], *, site: str, urls: bool) -> types.ElicitRequest | None:
    kind, server = call["kind"], call.get("server") or "an MCP server"
    params: types.ElicitRequestFormParams | types.ElicitRequestURLParams
    if kind in ASKED_KINDS:
        params = types.ElicitRequestFormParams(message=question(call), requested_schema=DECISION_SCHEMA)
    elif kind == QUESTION and call.get("mode") != "url":
        message = f"The MCP server {server} asks: {call.get('message', '')}"
        params = types.ElicitRequestFormParams(message=message, requested_schema=call.get("schema") or EMPTY_FORM)
    elif kind == QUESTION and urls:
        message = f"The MCP server {server} asks you to open a link: {call.get('message', '')}"
        params = types.ElicitRequestURLParams(message=message, url=call.get("url", ""), elicitation_id=call["id"])
    elif kind == CONNECT and urls:
        message = (
            f"Connect {server} to Aptix with your own account (in the browser), then accept; "
            "decline to go on without it."
        )
        url = site + connect_url(call["server"])
        params = types.ElicitRequestURLParams(message=message, url=url, elicitation_id=call["id"])
    else:
        return None
    return types.ElicitRequest(params=params)


def question(call: dict[str, Any]) -> str:
    """The form's message: what the turn wants to do and the model's reason."""
    if call["kind"] == "mode_change":
        try:
            wanted = json.loads(call["arguments"] or "{}").get("mode", "")
        except (ValueError, AttributeError):
            wanted = ""
        what = f"Switch this conversation to the mode {wanted!r}" if wanted else "Change this conversation's mode"
    else:
        what = f"Run the tool `{call['name']}` with {call['arguments'] or '{}'}"
    reason = f" Reason: {call['reason']}" if call.get("reason") else ""
    return f"Aptix asks for your approval. {what}?{reason}"


def state_for(*, user: Any, conversation_id: str, turn_id: str) -> str:
    return signing.dumps({"user": user.pk, "conversation": conversation_id, "turn": turn_id}, salt=SALT)


def conversation_of_state(*, user: Any, state: str) -> str:
    """The conversation a `requestState` this server gave the user names, or ApiError(400)."""
    try:
        data = signing.loads(state, salt=SALT, max_age=MAX_AGE)
    except signing.BadSignature:  # SignatureExpired too
        raise ApiError(400, ERROR_STATE) from None
    if not isinstance(data, dict) or data.get("user") != user.pk or not isinstance(data.get("conversation"), str):
        raise ApiError(400, ERROR_STATE)
    return data["conversation"]


def answer_of(response: Any) -> tuple[str, dict[str, Any] | None]:
    """An elicitation's answer as (action, content): "accept", "decline" or "cancel" (unanswered)."""
    action = getattr(response, "action", None)
    if action not in ("accept", "decline", "cancel"):
        return "cancel", None
    content = getattr(response, "content", None)
    return action, dict(content) if action == "accept" and content is not None else None


def decisions_of(responses: dict[str, Any], awaiting: list[dict[str, Any]]) -> list[UserDecision]:
    """The approvals the client's answers decide: a tool call or mode change approved only when the user
    accepted the form with "approve" (declined, cancelled or unanswered is a denial); a connection
    declined or cancelled is left unconnected, while an accepted one is decided by connecting
    (agents.approvals.connect_answered) and waits until then. Questions are answers, not decisions."""
    decisions = []
    for call in awaiting:
        action, content = answer_of(responses.get(call["id"]))
        if call["kind"] in ASKED_KINDS:
            approved = action == "accept" and (content or {}).get("decision") == "approve"
            decisions.append(UserDecision(call["id"], approved))
        elif call["kind"] == CONNECT and action != "accept":
            decisions.append(UserDecision(call["id"], False))
    return decisions
