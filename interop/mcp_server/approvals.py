"""A turn waiting for the user's approval, asked back through the calling client (the 2026-07-28
protocol's multi-round-trip requests: the tool call answers `InputRequiredResult` with an elicitation
form per waiting call, and the client calls again with the answers and the opaque `requestState`).

Stateless as the rest of the server: the state is the conversation and turn, signed for the user, so
any process can take the answers; they are then decided as the JSON API's `approvals` (agents/web/api.py
prepare_turn, approval_decide), which checks again that the turn is the user's and still waiting.
Only tool calls and mode changes are asked this way; an MCP server's question or a connection to
make waits for the browser, as does anything a client that cannot elicit leaves waiting."""

from __future__ import annotations

import json
from typing import Any

from django.core import signing

from agents.approvals import UserDecision
from agents.web.api_support import ApiError

ASKED_KINDS = frozenset({"tool", "mode_change"})
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


def can_ask(awaiting: list[dict[str, Any]]) -> bool:
    """Whether every waiting call is one an approve/deny form decides."""
    return bool(awaiting) and all(call["kind"] in ASKED_KINDS for call in awaiting)


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


def decisions_of(responses: dict[str, Any], awaiting_ids: list[str]) -> list[UserDecision]:
    """Each waiting call's decision from the client's elicitation answers: approved only when the
    user accepted the form with "approve"; declined, cancelled or unanswered is a denial."""
    decisions = []
    for call_id in awaiting_ids:
        response = responses.get(call_id)
        content = getattr(response, "content", None) or {}
        approved = getattr(response, "action", None) == "accept" and content.get("decision") == "approve"
        decisions.append(UserDecision(call_id, approved))
    return decisions
